#include "shims/libs/dynamic_library.h"

#include "runtime/entry.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace aotirt {
namespace libs {
namespace {

// "a, b and c" (`separator` between the others, `last` before the last).
std::string listing(const std::vector<std::string>& items, const char* last = " and ", const char* separator = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i == 0 ? "" : i + 1 == items.size() ? last : separator) + items[i];
  return s;
}

// The site-packages folder `path` lies in, or "".
std::string site_packages_of(const std::string& path) {
  for (const char* folder : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = path.rfind(folder);
    if (at != std::string::npos) return path.substr(0, at + std::string(folder).size() - 1);
  }
  return "";
}

void add_unique(std::vector<std::string>* items, const std::string& item) {
  if (item.empty()) return;
  for (const std::string& known : *items)
    if (known == item) return;
  items->push_back(item);
}

int collect_site_packages(struct dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name && *info->dlpi_name)
    add_unique(static_cast<std::vector<std::string>*>(data), site_packages_of(info->dlpi_name));
  return 0;
}

// The sonames that name a version ("libcublas.so.13"): what a full path set
// in the environment variable should point to.
std::vector<std::string> versioned(const LibrarySpec& spec) {
  std::vector<std::string> names;
  for (const std::string& soname : spec.sonames)
    if (soname.find(".so.") != std::string::npos) names.push_back(soname);
  return names;
}

std::mutex& registered_mutex() {
  static std::mutex* m = new std::mutex();  // never destroyed: loads may run during exit
  return *m;
}

std::vector<std::string>& registered_dirs() {
  static std::vector<std::string>* dirs = new std::vector<std::string>();
  return *dirs;
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

void register_wheel_dirs(std::vector<std::string> dirs);

std::vector<std::string> site_packages_dirs() {
  std::vector<std::string> dirs;
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&site_packages_dirs), &self) && self.dli_fname)
    add_unique(&dirs, site_packages_of(self.dli_fname));
  dl_iterate_phdr(&collect_site_packages, &dirs);
  std::lock_guard<std::mutex> lock(registered_mutex());
  for (const std::string& dir : registered_dirs()) add_unique(&dirs, dir);
  return dirs;
}

void register_wheel_dirs(std::vector<std::string> dirs) {
  std::lock_guard<std::mutex> lock(registered_mutex());
  registered_dirs() = std::move(dirs);
}

std::vector<std::string> candidates(const LibrarySpec& spec, bool* from_env) {
  const char* configured = spec.env_var.empty() ? nullptr : std::getenv(spec.env_var.c_str());
  *from_env = configured && *configured;
  if (*from_env) return {configured};
  std::vector<std::string> files;
  for (const std::string& dir : site_packages_dirs())
    for (const std::string& wheel_file : spec.wheel_files) add_unique(&files, dir + "/" + wheel_file);
  for (const std::string& soname : spec.sonames) add_unique(&files, soname);
  return files;
}

bool resolve_all(void* handle, std::initializer_list<Symbol> symbols, const char* what, std::string* why) {
  for (const Symbol& symbol : symbols) {
    *symbol.slot = dlsym(handle, symbol.name);
    if (!*symbol.slot) {
      *why = std::string("has no ") + symbol.name + " (" + what + ")";
      return false;
    }
  }
  return true;
}

void* open_first(const LibrarySpec& spec, const Accept& accept, std::string* path, std::string* error) {
  bool from_env = false;
  const std::vector<std::string> files = candidates(spec, &from_env);
  if (from_env && files[0].find('/') == std::string::npos) {
    // A bare name would make dlopen search the library path for it: not the
    // file the user named. A path is what the variable takes.
    *error = spec.env_var + "=" + files[0] + " is not a path (it has no '/'): dlopen would search the library "
             "path for it. Set it to the full path of " + listing(versioned(spec), " or ") +
             " (./" + files[0] + " for one in the working folder), or unset it";
    return nullptr;
  }
  std::vector<std::string> reasons;
  for (const std::string& file : files) {
    dlerror();
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* message = dlerror();
      reasons.push_back(message ? message : file + ": could not be opened");
      continue;
    }
    std::string why;
    if (accept(handle, &why)) {
      *path = file;
      error->clear();
      return handle;
    }
    reasons.push_back(file + ": " + why);
    dlclose(handle);
  }
  const std::string full_path = "the full path of " + listing(versioned(spec), " or ");
  if (from_env) {
    *error = spec.name + " could not be loaded from " + spec.env_var + "=" + files[0] + " (" + listing(reasons, "; ", "; ") +
             "). Set " + spec.env_var + " to " + full_path + ", or unset it to search " + listing(spec.sonames) +
             " (the pip wheels' copies first). " + spec.install_hint;
  } else {
    *error = spec.name + " could not be loaded; tried " + listing(files) + " (" + listing(reasons, "; ", "; ") + "). " +
             spec.install_hint + "; or set " + spec.env_var + " to " + full_path;
  }
  return nullptr;
}

}  // namespace libs
}  // namespace aotirt

extern "C" AOTIRT_API aotirt_status aotirt_set_wheel_dirs(const char* colon_separated_paths) {
  AOTIRT_ENTRY();
  std::vector<std::string> dirs;
  const std::string rest = colon_separated_paths ? colon_separated_paths : "";
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(':', start);
    if (end == std::string::npos) end = rest.size();
    std::string dir = rest.substr(start, end - start);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    // Absolute folders only: a relative one would depend on the working directory.
    if (!dir.empty() && dir[0] == '/' && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    start = end + 1;
  }
  aotirt::libs::register_wheel_dirs(std::move(dirs));
  return AOTIRT_OK;
}
