// Checks a file is a loadable shared library before dlopen sees it.
//
// glibc's loader trusts the program headers: a truncated library maps
// segments past the end of the file and the process dies with SIGBUS on the
// first touch. Checking the headers against the file size turns that into an
// error that names the file.
#pragma once

#include <string>
#include <vector>

#include "aotirt/aotirt.h"

namespace aotirt {

aotirt_status check_shared_library(const std::string& path);

// The names of the strong undefined symbols of the library at `path` that
// start with `prefix` (read from its .dynsym): what it expects the process
// to provide.
aotirt_status undefined_symbols(const std::string& path, const std::string& prefix,
                                std::vector<std::string>* names);

}  // namespace aotirt
