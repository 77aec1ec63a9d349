#include "collect/trigger_service.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace ptprof::launcher {

void TriggerService::poll(bool final) {
  wire::SessionHeader* h = session_.header();
  for (;;) {
    const uint32_t requested = h->trigger_seq.load(std::memory_order_acquire);
    const uint32_t done = h->trigger_done.load(std::memory_order_relaxed);
    if (requested == done) return;
    const uint32_t window = done;  // request done+1 records window `done`
    const Collector::WindowProgress p = collector_.window_progress(window);
    if (!final && (!p.begun || p.open)) return;
    std::string paths;
    for (const WindowFile& f : sink_.files())
      if (f.window == window) paths += f.path + "\n";
    const size_t n = std::min(paths.size(), sizeof h->trigger_paths - 1);
    std::memcpy(h->trigger_paths, paths.data(), n);
    h->trigger_paths[n] = '\0';
    h->trigger_done.store(done + 1, std::memory_order_release);
  }
}

}  // namespace ptprof::launcher
