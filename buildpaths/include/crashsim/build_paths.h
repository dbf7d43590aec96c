// crashsim/build_paths.h — the absolute source and binary directories of the build this
// program was compiled in (CMAKE_SOURCE_DIR, CMAKE_BINARY_DIR). Tests find the scenarios, the
// schemas and the built binaries through them; the harness's default scenario directory is
// <source dir>/scenarios. Both are defined in one generated file (buildpaths/CMakeLists.txt),
// never on a compile command, so that compiles of a clone at another path are cache hits.
#pragma once

namespace crashsim::build_paths {
extern const char* const kSourceDir;  // CMAKE_SOURCE_DIR, no trailing slash
extern const char* const kBinaryDir;  // CMAKE_BINARY_DIR, no trailing slash
}  // namespace crashsim::build_paths

#define CRASHSIM_SOURCE_DIR (::crashsim::build_paths::kSourceDir)
#define CRASHSIM_BINARY_DIR (::crashsim::build_paths::kBinaryDir)
