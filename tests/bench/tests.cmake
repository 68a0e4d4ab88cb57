# Tests of `nfsx bench` (src/bench, apps/nfsx/bench, bench/compare.sh): every workload at
# tiny sizes through the real command line, with the JSON checked (bench_test.cc), and a
# --quick run of compare.sh end to end.
set(NFSX_BENCH_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

if(TARGET nfsx_bench)
  add_executable(bench_test ${NFSX_BENCH_TEST_DIR}/bench_test.cc)
  target_link_libraries(bench_test PRIVATE nfsx_bench GTest::gtest_main nfsx_warnings)
  add_dependencies(bench_test nfsx)
  gtest_discover_tests(bench_test
    PROPERTIES ENVIRONMENT "NFSX=$<TARGET_FILE:nfsx>" TIMEOUT 300 LABELS bench)

  add_test(NAME bench_compare_quick
    COMMAND bash ${NFSX_BENCH_TEST_DIR}/compare_quick.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(bench_compare_quick PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS "bench;interop" RUN_SERIAL TRUE)
endif()
