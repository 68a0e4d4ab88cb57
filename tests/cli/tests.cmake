# Tests of `nfsx ls|cat|cp|stat|rm|mkdir|mv` (apps/nfsx/client). Every name starts with
# "cli" and every test has the label cli: `ctest -L cli` runs exactly these (`-R cli` also
# matches the client library's tests).

# Unit tests of the pure pieces (URLs, paths, formats, the progress bar) and of the copy
# logic on local trees. The command sources are not a library: the test compiles the ones
# it needs.
set(NFSX_CLI_DIR ${PROJECT_SOURCE_DIR}/apps/nfsx/client)
set(NFSX_CLI_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
file(GLOB NFSX_CLI_UNIT_TESTS CONFIGURE_DEPENDS ${NFSX_CLI_DIR}/*_test.cc)
add_executable(cli_unit_test ${NFSX_CLI_UNIT_TESTS}
  ${NFSX_CLI_DIR}/path_util.cc ${NFSX_CLI_DIR}/nfs_url.cc ${NFSX_CLI_DIR}/progress.cc
  ${NFSX_CLI_DIR}/stat_format.cc ${NFSX_CLI_DIR}/ls_format.cc ${NFSX_CLI_DIR}/location.cc
  ${NFSX_CLI_DIR}/local_tree.cc ${NFSX_CLI_DIR}/nfs_tree.cc ${NFSX_CLI_DIR}/copier.cc
  ${NFSX_CLI_DIR}/report.cc ${NFSX_CLI_DIR}/connections.cc ${NFSX_CLI_DIR}/endpoints.cc)
target_include_directories(cli_unit_test PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(cli_unit_test PRIVATE nfsx_client GTest::gtest_main nfsx_warnings)
gtest_discover_tests(cli_unit_test TEST_PREFIX "cli." DISCOVERY_TIMEOUT 60 PROPERTIES LABELS cli)

# End to end: each script starts its own `nfsx serve` on ports the kernel picks.
function(nfsx_cli_test name)
  add_test(NAME cli_${name} COMMAND bash ${NFSX_CLI_TEST_DIR}/${name}.sh)
  set_tests_properties(cli_${name} PROPERTIES
    ENVIRONMENT "NFSX=$<TARGET_FILE:nfsx>"
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    LABELS cli)
endfunction()

nfsx_cli_test(ls_cat_stat)
nfsx_cli_test(cp_file)
nfsx_cli_test(cp_tree)
nfsx_cli_test(namespace)
nfsx_cli_test(errors)

# URLs of files below an export, against both servers (tests/fuse/lib.sh starts them).
foreach(server nfsx ganesha)
  add_test(NAME cli_file_urls_${server} COMMAND bash ${NFSX_CLI_TEST_DIR}/file_urls.sh ${server})
  set_tests_properties(cli_file_urls_${server} PROPERTIES
    ENVIRONMENT "NFSX=$<TARGET_FILE:nfsx>"
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    LABELS cli)
endforeach()
