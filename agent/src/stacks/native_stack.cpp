#include "stacks/native_stack.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "record/services.hpp"

namespace ptprof::agent {

bool NativeStacks::load() {
  int s = state_.load(std::memory_order_acquire);
  if (s != 0) return s == 1;
  std::lock_guard lock(mu_);
  s = state_.load(std::memory_order_relaxed);
  if (s == 0) {
    void* lib = ::dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    unwinder_.gate = &gate_;
    if (lib) {
      const auto sym = [lib]<typename F>(F& f, const char* name) { f = reinterpret_cast<F>(::dlsym(lib, name)); };
      sym(unwinder_.backtrace, "unw_backtrace");
      // For remembering walks (x86-64's names); without them every op walks.
      sym(unwinder_.getcontext, "_Ux86_64_getcontext");
      sym(unwinder_.init_local, "_ULx86_64_init_local");
      sym(unwinder_.step, "_ULx86_64_step");
      sym(unwinder_.get_reg, "_ULx86_64_get_reg");
    }
    s = unwinder_.backtrace ? 1 : 2;
    state_.store(s, std::memory_order_release);
  }
  return s == 1;
}

uint32_t NativeStacks::capture(uintptr_t* out, uint32_t max, NativeWalkCache& walks, uintptr_t stop_begin,
                               uintptr_t stop_end) {
  if (!load()) [[unlikely]]
    return 0;
  return walks.capture(unwinder_, out, max, stop_begin, stop_end);
}

void NativeStacks::refresh() {
  modules_.clear();
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* modules = static_cast<std::vector<Module>*>(data);
        Module m;
        m.bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          const uintptr_t b = info->dlpi_addr + ph.p_vaddr, e = b + ph.p_memsz;
          if (!m.end || b < m.begin) m.begin = b;
          if (e > m.end) m.end = e;
        }
        if (!m.end) return 0;
        char exe[PATH_MAX];
        const char* path = info->dlpi_name;
        if (!path || !*path) {  // the main program
          const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
          exe[n > 0 ? n : 0] = '\0';
          path = exe;
        }
        const char* text = nullptr;
        m.name = intern_name(path, &text);
        // The agent's own frames are left out of every stack.
        m.agent = std::strstr(path, "libptprof_agent") != nullptr;
        modules->push_back(m);
        return 0;
      },
      &modules_);
}

const NativeStacks::Module* NativeStacks::find(uintptr_t addr) const {
  for (const Module& m : modules_)
    if (addr >= m.begin && addr < m.end) return &m;
  return nullptr;
}

bool NativeStacks::locate(uintptr_t addr, uint32_t* module, uint64_t* offset) {
  std::lock_guard lock(mu_);
  const Module* m = find(addr);
  if (!m) {  // a library loaded since the last look
    refresh();
    m = find(addr);
  }
  if (!m || m->agent || !m->name) return false;
  *module = m->name;
  *offset = addr - m->bias;
  return true;
}

bool NativeStacks::segments(uintptr_t addr, uintptr_t* begin, uintptr_t* end) {
  std::lock_guard lock(mu_);
  const Module* m = find(addr);
  if (!m) {
    refresh();
    m = find(addr);
  }
  if (!m) return false;
  *begin = m->begin;
  *end = m->end;
  return true;
}

}  // namespace ptprof::agent
