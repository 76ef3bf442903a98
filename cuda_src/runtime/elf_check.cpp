#include "runtime/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "runtime/errors.h"

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

aotirt_status undefined_symbols(const std::string& path, const std::string& prefix,
                                std::vector<std::string>* names) {
  auto bad = [&](const std::string& why) {
    return fail(AOTIRT_ERROR_AOTI, "cannot read the symbol table of " + path + ": " + why);
  };
  File file(path);
  struct stat info {};
  if (file.fd() < 0 || fstat(file.fd(), &info) != 0) return bad(std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  Elf64_Ehdr header{};
  if (!file.read_at(&header, sizeof(header), 0)) return bad("no ELF header");
  if (header.e_shoff == 0 || header.e_shnum == 0) return AOTIRT_OK;  // no sections: nothing to check
  if (header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shoff + uint64_t(header.e_shnum) * sizeof(Elf64_Shdr) > size)
    return bad("truncated section headers");
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (!file.read_at(sections.data(), sections.size() * sizeof(Elf64_Shdr), header.e_shoff))
    return bad("could not read the section headers");

  for (const Elf64_Shdr& symtab : sections) {
    if (symtab.sh_type != SHT_DYNSYM) continue;
    if (symtab.sh_link >= sections.size() || symtab.sh_entsize != sizeof(Elf64_Sym)) return bad("malformed .dynsym");
    const Elf64_Shdr& strtab = sections[symtab.sh_link];
    if (symtab.sh_offset + symtab.sh_size > size || strtab.sh_offset + strtab.sh_size > size)
      return bad("truncated .dynsym or its strings");
    std::vector<Elf64_Sym> symbols(symtab.sh_size / sizeof(Elf64_Sym));
    std::vector<char> strings(strtab.sh_size + 1, '\0');  // one extra NUL ends the last name
    if (!file.read_at(symbols.data(), symbols.size() * sizeof(Elf64_Sym), symtab.sh_offset) ||
        !file.read_at(strings.data(), strtab.sh_size, strtab.sh_offset))
      return bad("could not read .dynsym");
    for (const Elf64_Sym& symbol : symbols) {
      if (symbol.st_shndx != SHN_UNDEF || ELF64_ST_BIND(symbol.st_info) == STB_WEAK) continue;
      if (symbol.st_name >= strtab.sh_size) continue;
      const char* name = strings.data() + symbol.st_name;
      if (std::strncmp(name, prefix.c_str(), prefix.size()) == 0) names->push_back(name);
    }
  }
  return AOTIRT_OK;
}

}  // namespace aotirt
