// The launcher's half of on-demand capture (`ptprof run --on-demand`):
// `ptprof trigger` asks for a window by bumping the session's trigger_seq;
// the agents record it (window index = the request's number - 1) and the
// launcher writes it as any window. This answers the request once every
// process that began the window has had it written: it publishes the files'
// paths in the session and bumps trigger_done, which the waiting trigger
// prints.
#pragma once
#include "collect/collector.hpp"
#include "collect/file_window_sink.hpp"
#include "collect/session.hpp"

namespace ptprof::launcher {

class TriggerService {
 public:
  TriggerService(Session& session, Collector& collector, const FileWindowSink& sink)
      : session_(session), collector_(collector), sink_(sink) {}
  // One round. `final`: the run is over; answer every request left.
  void poll(bool final);

 private:
  Session& session_;
  Collector& collector_;
  const FileWindowSink& sink_;
};

}  // namespace ptprof::launcher
