// Names native frames when a trace is read: the function symbols of a
// module's ELF file (.symtab, else .dynsym), read once per module and looked
// up by the frame's offset (an address of the module's image). No dladdr:
// the module need not be loaded, only present at the path the trace names.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptprof::stacks {

class ElfSymbols {
 public:
  // The demangled name of the function of `path` that holds `offset`;
  // empty when the file cannot be read or no symbol holds it.
  std::string lookup(const std::string& path, uint64_t offset);

 private:
  struct Symbol {
    uint64_t addr = 0;
    uint64_t size = 0;
    std::string name;  // mangled; demangled on lookup
  };
  const std::vector<Symbol>& load(const std::string& path);

  std::map<std::string, std::vector<Symbol>> modules_;
};

}  // namespace ptprof::stacks
