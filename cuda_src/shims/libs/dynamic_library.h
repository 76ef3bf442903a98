// Finding and opening an optional library of the field (cuDNN; cuBLAS could
// move here) the first time a shim needs it: the file an environment
// variable names (and nothing else when it is set), else the copy a pip
// wheel put in a site-packages folder, else the system's through the dynamic
// linker. A failure names every file tried, why each failed, and how to
// install the library.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace aotirt {
namespace libs {

struct Search {
  const char* label;                     // "cuDNN"
  const char* env;                       // "AOTIRT_CUDNN": a full path, tried alone when set
  std::vector<std::string> wheel_files;  // under a site-packages folder: "nvidia/cudnn/lib/libcudnn.so.9"
  std::vector<std::string> system_names; // for the dynamic linker: "libcudnn.so.9"
  const char* install;                   // "`pip install nvidia-cudnn-cu13` (or ...)"
};

// Takes an opened candidate, or says why not (`*why`, e.g. a missing symbol
// or a version too old); a refused candidate is closed again.
using Accept = std::function<bool(void* handle, const std::string& file, std::string* why)>;

// The first candidate that opens (RTLD_NOW | RTLD_LOCAL: its symbols never
// resolve a model's) and is accepted, or nullptr with `*error` saying what
// was tried. The handle stays open for the life of the process.
void* open(const Search& search, const Accept& accept, std::string* error);

// The site-packages folders searched for wheel files, in order: the folder
// above the one libaotirt.so is in (an installed aotirt sits in
// site-packages/aotirt/), then those Python registered with
// aotirt_set_wheel_dirs.
std::vector<std::string> wheel_dirs();

// The file a loaded symbol comes from (dladdr), or "" when unknown.
std::string file_of(const void* symbol);

}  // namespace libs
}  // namespace aotirt
