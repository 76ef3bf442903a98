#include "elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "errors.h"

namespace aotirt {
namespace {

#if defined(__x86_64__)
constexpr int kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kHostMachine = EM_AARCH64;
#else
constexpr int kHostMachine = -1;  // not checked
#endif

class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() { if (fd_ >= 0) ::close(fd_); }
  int fd() const { return fd_; }
  bool read_at(void* out, size_t bytes, uint64_t offset) const {
    return ::pread(fd_, out, bytes, static_cast<off_t>(offset)) == static_cast<ssize_t>(bytes);
  }

 private:
  int fd_;
};

}  // namespace

aotirt_status check_shared_library(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return fail(AOTIRT_ERROR_AOTI, "cannot load model library " + path + ": " + why);
  };
  File file(path);
  if (file.fd() < 0) return fail(AOTIRT_ERROR_AOTI, "cannot open model library " + path + ": " + std::strerror(errno));
  struct stat info {};
  if (fstat(file.fd(), &info) != 0) return bad(std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return bad("not a regular file");
  const uint64_t size = static_cast<uint64_t>(info.st_size);

  Elf64_Ehdr header{};
  if (size < sizeof(header) || !file.read_at(&header, sizeof(header), 0))
    return bad("the file is too short to be a shared library (" + std::to_string(size) + " bytes)");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return bad("not an ELF file (invalid ELF header)");
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return bad("not a 64-bit ELF file");
  if (header.e_type != ET_DYN) return bad("not a shared library (ELF type " + std::to_string(header.e_type) + ")");
  if (kHostMachine >= 0 && header.e_machine != kHostMachine)
    return bad("built for another processor (ELF machine " + std::to_string(header.e_machine) + ")");
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0)
    return bad("its program headers are malformed");

  const uint64_t table_end = header.e_phoff + uint64_t(header.e_phnum) * sizeof(Elf64_Phdr);
  if (header.e_phoff > size || table_end > size)
    return bad("truncated: the program headers end at byte " + std::to_string(table_end) + " of " + std::to_string(size));
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!file.read_at(segments.data(), segments.size() * sizeof(Elf64_Phdr), header.e_phoff))
    return bad("could not read its program headers");
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr& s = segments[i];
    if (s.p_type != PT_LOAD && s.p_type != PT_DYNAMIC) continue;
    const uint64_t end = s.p_offset + s.p_filesz;
    if (end < s.p_offset || end > size)
      return bad("truncated: segment " + std::to_string(i) + " ends at byte " + std::to_string(end) +
                 " but the file has " + std::to_string(size) + " bytes");
  }
  return AOTIRT_OK;
}

}  // namespace aotirt
