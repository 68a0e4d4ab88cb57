# Crash loops: writers through the library and through nfsx mount keep writing and
# fsyncing while the server under them is killed and restarted, or their network cut.
# They need the FUSE mount (the mount's writer) and root (a local export whose file
# handles survive the restart); exit status 77 says which is missing.
if(NOT TARGET nfsx_fuse)
  return()
endif()

set(NFSX_CRASH_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(crash_writer ${NFSX_CRASH_TEST_DIR}/crash_writer.cc)
target_link_libraries(crash_writer PRIVATE nfsx::nfsx nfsx_warnings)

function(nfsx_crash_test name script)
  add_test(NAME ${name} COMMAND bash ${NFSX_CRASH_TEST_DIR}/${script} ${ARGN})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "NFSX=$<TARGET_FILE:nfsx>;NFSX_CRASH_WRITER=$<TARGET_FILE:crash_writer>;NFSX_TEST_TIMEOUT=3600"
    SKIP_RETURN_CODE 77
    TIMEOUT 3600  # make soak: 100 rounds
    LABELS crash)
endfunction()

nfsx_crash_test(crash_loop_kill crash_loop.sh kill)
nfsx_crash_test(crash_loop_cut crash_loop.sh cut)
