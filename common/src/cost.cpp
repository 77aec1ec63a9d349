#include "ptprof/cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ptprof/cuda_status.hpp"
#include "ptprof/saturating.hpp"

namespace ptprof::cost {

Tally& Tally::operator+=(const Tally& o) {
  ops += o.ops;
  records += o.records;
  uncalibrated += o.uncalibrated;
  op_ps += o.op_ps;
  record_ps += o.record_ps;
  recorded_ns = detail::saturating_add(recorded_ns, o.recorded_ns);  // merged traces' times may be huge
  return *this;
}

void TallyBuilder::add(const trace::Trace& t, const trace::Event& e) {
  const trace::Process* p = nullptr;
  if (e.thread < t.threads.size() && t.threads[e.thread].process < t.processes.size())
    p = &t.processes[t.threads[e.thread].process];
  if (e.kind == trace::EventKind::Step && e.end_ns > e.start_ns)
    steps_ns_ = detail::saturating_add(steps_ns_, detail::saturating_sub(e.end_ns, e.start_ns));
  if (wire::is_cuda_note(t, e)) return;  // the agent's note on CUDA, once per window: not the program's
  tally_.charge(e.kind, p ? p->op_cost_ps : 0, p ? p->record_cost_ps : 0);
  if (e.kind == trace::EventKind::Op || records_of(e.kind)) {
    first_ = std::min(first_, e.start_ns);
    last_ = std::max(last_, e.end_ns);
  }
}

Tally TallyBuilder::finish() const {
  Tally r = tally_;
  r.recorded_ns = steps_ns_ > 0 ? steps_ns_ : (last_ > first_ ? detail::saturating_sub(last_, first_) : 0);
  return r;
}

Tally tally(const trace::Trace& t) {
  TallyBuilder b;
  for (const trace::Event& e : t.events) b.add(t, e);
  return b.finish();
}

std::string describe(const Tally& t) {
  if (t.ops == 0 && t.records == 0)
    return t.uncalibrated ? "not measured (the process measured no cost per event)" : "nothing recorded";
  char buf[320];
  // Under 0.1 ms in microseconds: a short run's cost is not "0.0 ms".
  const double added_ns = t.added_ns();
  int n = added_ns < 100'000 ? std::snprintf(buf, sizeof buf, "about %.1f us", added_ns / 1e3)
                             : std::snprintf(buf, sizeof buf, "about %.1f ms", added_ns / 1e6);
  if (t.recorded_ns > 0) {
    // Two significant digits under 0.1%: a whole run whose import takes
    // seconds makes ptprof's share tiny, and "0.0%" would read as nothing.
    const double pct = 100 * t.share();
    const int decimals = pct > 0 && pct < 0.1 ? std::clamp(1 - int(std::floor(std::log10(pct))), 2, 6) : 1;
    n += std::snprintf(buf + n, sizeof buf - size_t(n), ", %.*f%% of the recorded time", decimals, pct);
  }
  n += std::snprintf(buf + n, sizeof buf - size_t(n), " (");
  if (t.ops)
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "%llu ops x %.1f ns%s", (unsigned long long)t.ops,
                       t.op_ns() / double(t.ops), t.records ? ", " : "");
  if (t.records)
    n += std::snprintf(buf + n, sizeof buf - size_t(n), "%llu records x %.1f ns", (unsigned long long)t.records,
                       t.record_ns() / double(t.records));
  std::snprintf(buf + n, sizeof buf - size_t(n), ", per-event costs measured at start-up)");
  return buf;
}

}  // namespace ptprof::cost
