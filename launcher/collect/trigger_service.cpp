#include "collect/trigger_service.hpp"

#include <string_view>
#include <vector>

#include "ptprof/trigger_request.hpp"

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
    std::vector<std::string_view> paths;
    for (const WindowFile& f : sink_.files())
      if (f.window == window) paths.emplace_back(f.path);
    wire::write_trigger_paths(*h, paths);
    h->trigger_done.store(done + 1, std::memory_order_release);
  }
}

}  // namespace ptprof::launcher
