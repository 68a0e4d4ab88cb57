# Warnings are on for our own code and treated as errors so they stay at zero.
add_library(nfsx_warnings INTERFACE)
target_compile_options(nfsx_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough -Werror)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ 12's -Wnull-dereference and -Wmaybe-uninitialized give false positives inside
  # libstdc++'s std::expected/std::variant at -O2.
  target_compile_options(nfsx_warnings INTERFACE -Wno-null-dereference -Wno-maybe-uninitialized)
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # g++ 12 at -O3 (the Release build type) reports -Wrestrict inside libstdc++'s
    # std::string assignment from a literal (GCC bug 105651, fixed in 13).
    target_compile_options(nfsx_warnings INTERFACE -Wno-restrict)
  endif()
endif()
