# Tests of the FUSE mount (nfsx mount): each script starts its own server (nfsx serve on
# ports the kernel picks, or NFS-Ganesha through tests/peers/ganesha.sh), mounts it with
# nfsx mount and checks through the mount. Exit status 77 means skipped: no /dev/fuse,
# no privilege to mount, or Ganesha cannot run here (the test says which).
if(NOT TARGET nfsx_fuse)
  return()
endif()

set(NFSX_FUSE_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
add_executable(posix_suite ${NFSX_FUSE_TEST_DIR}/posix_suite.cc)
target_compile_definitions(posix_suite PRIVATE _GNU_SOURCE)
target_link_libraries(posix_suite PRIVATE nfsx_warnings)
add_executable(fsx ${NFSX_FUSE_TEST_DIR}/fsx.cc)
target_link_libraries(fsx PRIVATE nfsx_warnings)

function(nfsx_fuse_test name script)
  add_test(NAME ${name} COMMAND bash ${NFSX_FUSE_TEST_DIR}/${script} ${ARGN})
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "NFSX=$<TARGET_FILE:nfsx>;NFSX_FUSE_BIN=$<TARGET_FILE_DIR:fsx>;NFSX_TEST_TIMEOUT=600"
    SKIP_RETURN_CODE 77
    TIMEOUT 600
    LABELS fuse)
endfunction()

foreach(server nfsx ganesha)
  nfsx_fuse_test(fuse_posix_${server} posix.sh ${server})
  nfsx_fuse_test(fuse_fsx_${server} fsx.sh ${server})
  nfsx_fuse_test(fuse_two_mounts_${server} two_mounts.sh ${server})
  nfsx_fuse_test(fuse_umount_dirty_${server} umount_dirty.sh ${server})
  nfsx_fuse_test(fuse_hardlink_${server} hardlink.sh ${server})
  nfsx_fuse_test(fuse_real_programs_${server} real_programs.sh ${server})
  nfsx_fuse_test(fuse_pollers_${server} pollers.sh ${server})
  nfsx_fuse_test(fuse_teardown_busy_${server} teardown_busy.sh ${server})
endforeach()
nfsx_fuse_test(fuse_mount_cli mount_cli.sh)
nfsx_fuse_test(fuse_stalled_server stalled_server.sh)
nfsx_fuse_test(fuse_unlink_open unlink_open.sh)
