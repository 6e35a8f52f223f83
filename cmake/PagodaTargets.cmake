# Shared helpers for every pagoda library, binary and test.

set(PAGODA_WARNINGS -Wall -Wextra -Wpedantic -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # -Wrestrict has false positives on std::string concatenation in GCC 12 (PR105651).
  list(APPEND PAGODA_WARNINGS -Wshadow=local -Wno-restrict)
else()
  list(APPEND PAGODA_WARNINGS -Wshadow-uncaptured-local)
endif()
if(PAGODA_WERROR)
  list(APPEND PAGODA_WARNINGS -Werror)
endif()

if(PAGODA_SANITIZE)
  # -O1, as the sanitizers' own docs advise: at -O0 the kernels' intrinsics ran kernels_test's
  # every-ISA sweep in 513-548 s under ASan on a 2-core machine (past its 600 s timeout on CI's),
  # at -O1 in ~60 s. Debug keeps the assertions (no NDEBUG).
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -O1)
  add_link_options(-fsanitize=address,undefined)
endif()
if(PAGODA_FUZZ)
  # Instrument everything for coverage; the fuzz targets add -fsanitize=fuzzer at link time.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  # Under the coverage instrumentation clang cannot always honour the kernels' unroll pragmas
  # (which target the release build's speed) and says so with -Wpass-failed; a fuzz build's
  # speed is not the point.
  add_compile_options(-Wno-pass-failed)
  add_link_options(-fsanitize=address,undefined)
endif()

# Fixtures live beside the checkout (../shared/fixtures); tests skip with a message if absent.
get_filename_component(PAGODA_FIXTURES_DIR "${CMAKE_SOURCE_DIR}/../shared/fixtures" ABSOLUTE)

# pagoda_include_root(TARGET NAME PUBLIC|PRIVATE|INTERFACE)
# Gives TARGET an include root that holds only the current folder, as NAME/: at configure time
# ${CMAKE_BINARY_DIR}/include_roots/NAME/NAME becomes a link to ${CMAKE_CURRENT_SOURCE_DIR} and
# ${CMAKE_BINARY_DIR}/include_roots/NAME joins TARGET's include path. "NAME/x.h" then finds this
# folder's headers, and a target sees another library's headers only when it links that library
# (through its PUBLIC root): the compiler holds the code to the CMake deps, and
# scripts/check-layers.py holds the CMake deps to cmake/layers.txt.
function(pagoda_include_root target name scope)
  set(root ${CMAKE_BINARY_DIR}/include_roots/${name})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${root}/${name} SYMBOLIC)
  target_include_directories(${target} ${scope} ${root})
endfunction()

# pagoda_library(NAME [DEPS ...] [PRIVATE_DEPS ...])
# Builds every .cc under the current folder (recursively, excluding ISA-specific subfolders
# that add their own flags) as library pagoda_<NAME>. Its includes are "NAME/..." (its own
# folder, see pagoda_include_root), the headers of the libraries it links, and include/.
function(pagoda_library name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS;SOURCES" ${ARGN})
  if(ARG_SOURCES)
    set(srcs ${ARG_SOURCES})
  else()
    file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  endif()
  if(NOT srcs)
    # Not written yet: an interface library keeps the dependency graph whole.
    add_library(pagoda_${name} INTERFACE)
    pagoda_include_root(pagoda_${name} ${name} INTERFACE)
    target_include_directories(pagoda_${name} INTERFACE ${CMAKE_SOURCE_DIR}/include)
    target_link_libraries(pagoda_${name} INTERFACE ${ARG_DEPS})
  else()
    add_library(pagoda_${name} STATIC ${srcs})
    pagoda_include_root(pagoda_${name} ${name} PUBLIC)
    target_include_directories(pagoda_${name} PUBLIC ${CMAKE_SOURCE_DIR}/include)
    target_compile_options(pagoda_${name} PRIVATE ${PAGODA_WARNINGS})
    target_link_libraries(pagoda_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  endif()
  add_library(pagoda::${name} ALIAS pagoda_${name})
endfunction()

# pagoda_test(NAME LABELS <labels> SOURCES <files> DEPS <libs> [TIMEOUT s] [SHARDS n])
# One GoogleTest binary = one CTest entry, labelled (unit, golden, fuzz, server, slow, gpu).
# Tests may depend on anything: their includes are rooted at src/, include/ and tests/.
# SHARDS n splits a long binary into n entries NAME/0 .. NAME/n-1 through GoogleTest's own
# sharding (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX: every test runs in exactly one shard), so
# each entry has its own timeout and `ctest -j` runs them side by side.
function(pagoda_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;SHARDS" "LABELS;SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${PAGODA_WARNINGS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include
                                             ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE PAGODA_FIXTURES_DIR="${PAGODA_FIXTURES_DIR}"
                                             PAGODA_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                             PAGODA_BINARY_DIR="${CMAKE_BINARY_DIR}")
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  if(NOT ARG_SHARDS)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    return()
  endif()
  math(EXPR last "${ARG_SHARDS} - 1")
  foreach(shard RANGE ${last})
    add_test(NAME ${name}/${shard} COMMAND ${name})
    set_tests_properties(${name}/${shard} PROPERTIES
      LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
      ENVIRONMENT "GTEST_TOTAL_SHARDS=${ARG_SHARDS};GTEST_SHARD_INDEX=${shard}")
  endforeach()
endfunction()

# pagoda_fuzz_target(NAME SOURCES <files> DEPS <libs> [CORPUS dir])
# Built only when PAGODA_FUZZ is ON (clang), as a dependency of the `fuzz_targets` target (tests/fuzz),
# which `make test-fuzz` builds instead of everything. `make test` runs each for a bounded time.
function(pagoda_fuzz_target name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  if(NOT PAGODA_FUZZ)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include
                                             ${CMAKE_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzz_targets ${name})
endfunction()
