// A WindowSink that several drain threads may call at once (DrainPool): it
// passes each call on to the sink it wraps under one lock. Calls come once
// per window, not per event, so the lock is never on the drain's hot path;
// the traces it opens are each written by one thread.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "collect/window_sink.hpp"

namespace ptprof::launcher {

class LockedWindowSink final : public WindowSink {
 public:
  explicit LockedWindowSink(WindowSink& sink) : sink_(sink) {}
  Result<std::unique_ptr<format::TraceSink>> open(const std::string& path, const trace::Header& header) override {
    std::lock_guard lock(mu_);
    return sink_.open(path, header);
  }
  void window_written(const WindowFile& f) override {
    std::lock_guard lock(mu_);
    sink_.window_written(f);
  }
  void window_failed(const WindowFile& f, const std::string& error) override {
    std::lock_guard lock(mu_);
    sink_.window_failed(f, error);
  }

 private:
  WindowSink& sink_;
  std::mutex mu_;
};

}  // namespace ptprof::launcher
