#include "dynamic_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "aotirt/aotirt.h"

namespace aotirt {
namespace libs {
namespace {

std::mutex& dirs_mutex() {
  static std::mutex* m = new std::mutex();  // never destroyed: loads may run during exit
  return *m;
}

std::vector<std::string>& registered_dirs() {
  static std::vector<std::string>* dirs = new std::vector<std::string>();
  return *dirs;
}

std::string parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string dl_error(const std::string& file) {
  const char* message = dlerror();
  return message ? message : file + ": could not be opened";
}

}  // namespace

std::string file_of(const void* symbol) {
  Dl_info info{};
  if (!symbol || !dladdr(symbol, &info) || !info.dli_fname) return "";
  char* resolved = realpath(info.dli_fname, nullptr);
  std::string file = resolved ? resolved : info.dli_fname;
  std::free(resolved);
  return file;
}

std::vector<std::string> wheel_dirs() {
  std::vector<std::string> dirs;
  // libaotirt.so's folder's parent: site-packages when aotirt is installed.
  const std::string core = file_of(reinterpret_cast<const void*>(&wheel_dirs));
  const std::string above = parent(parent(core));
  if (!above.empty()) dirs.push_back(above);
  {
    std::lock_guard<std::mutex> lock(dirs_mutex());
    for (const std::string& d : registered_dirs())
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  }
  return dirs;
}

void* open(const Search& search, const Accept& accept, std::string* error) {
  const char* configured = std::getenv(search.env);
  const bool from_env = configured && *configured;
  std::vector<std::string> candidates;
  std::string tried;
  auto note = [&](const std::string& what) { tried += (tried.empty() ? "" : "; ") + what; };
  if (from_env) {
    candidates.push_back(configured);
  } else {
    for (const std::string& dir : wheel_dirs())
      for (const std::string& file : search.wheel_files) {
        const std::string path = dir + "/" + file;
        if (access(path.c_str(), F_OK) == 0)
          candidates.push_back(path);
        else
          note(path + ": not found");
      }
    candidates.insert(candidates.end(), search.system_names.begin(), search.system_names.end());
  }
  for (const std::string& candidate : candidates) {
    dlerror();
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      note(dl_error(candidate));
      continue;
    }
    std::string why;
    if (accept(handle, candidate, &why)) return handle;
    note(candidate + ": " + why);
    dlclose(handle);
  }
  const std::string label = search.label;
  std::string names;
  for (const std::string& n : search.system_names) names += (names.empty() ? "" : ", ") + n;
  if (from_env)
    *error = label + " could not be loaded from " + search.env + "=" + configured + " (" + tried + "). Set " +
             search.env + " to the full path of " + names + ", or unset it to search the pip wheel's copy and " +
             "the system's; " + search.install + " installs it";
  else
    *error = label + " could not be loaded; tried " + tried + ". Install it with " + search.install +
             ", or set " + search.env + " to the full path of " + names;
  return nullptr;
}

}  // namespace libs
}  // namespace aotirt

extern "C" AOTIRT_API aotirt_status aotirt_set_wheel_dirs(const char* colon_separated_paths) {
  std::vector<std::string> dirs;
  std::string rest = colon_separated_paths ? colon_separated_paths : "";
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(':', start);
    if (end == std::string::npos) end = rest.size();
    std::string dir = rest.substr(start, end - start);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (!dir.empty() && dir[0] == '/' && std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
      dirs.push_back(dir);
    start = end + 1;
  }
  std::lock_guard<std::mutex> lock(aotirt::libs::dirs_mutex());
  aotirt::libs::registered_dirs() = std::move(dirs);
  return AOTIRT_OK;
}
