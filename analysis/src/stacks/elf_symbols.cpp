#include "stacks/elf_symbols.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

namespace ptprof::stacks {
namespace {

bool read_at(std::ifstream& in, uint64_t offset, void* out, size_t bytes) {
  in.clear();
  in.seekg(std::streamoff(offset));
  in.read(static_cast<char*>(out), std::streamsize(bytes));
  return bool(in);
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                &std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

}  // namespace

const std::vector<ElfSymbols::Symbol>& ElfSymbols::load(const std::string& path) {
  auto [it, inserted] = modules_.try_emplace(path);
  if (!inserted) return it->second;
  std::vector<Symbol>& syms = it->second;
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in || !read_at(in, 0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0)
    return syms;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!read_at(in, eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) return syms;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strs = sections[sh.sh_link];
    if (sh.sh_size > (1ull << 31) || strs.sh_size > (1ull << 31)) continue;
    std::vector<Elf64_Sym> table(sh.sh_size / sizeof(Elf64_Sym));
    std::string names(strs.sh_size, '\0');
    if (!read_at(in, sh.sh_offset, table.data(), table.size() * sizeof(Elf64_Sym)) ||
        !read_at(in, strs.sh_offset, names.data(), names.size()))
      continue;
    for (const Elf64_Sym& s : table) {
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value == 0 || s.st_name >= names.size()) continue;
      syms.push_back(Symbol{s.st_value, s.st_size, std::string(names.c_str() + s.st_name)});
    }
  }
  std::sort(syms.begin(), syms.end(), [](const Symbol& a, const Symbol& b) { return a.addr < b.addr; });
  return syms;
}

std::string ElfSymbols::lookup(const std::string& path, uint64_t offset) {
  const std::vector<Symbol>& syms = load(path);
  auto it = std::upper_bound(syms.begin(), syms.end(), offset, [](uint64_t o, const Symbol& s) { return o < s.addr; });
  if (it == syms.begin()) return {};
  --it;
  // Symbols at one address (aliases): any of them names the function.
  if (offset >= it->addr + std::max<uint64_t>(it->size, 1)) return {};
  return demangle(it->name);
}

}  // namespace ptprof::stacks
