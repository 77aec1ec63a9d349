// Outermost spans: of one thread's spans taken in start order (longest first
// on a tie), those no earlier one still encloses. The ranks' op time adds up
// the outermost ops of each thread (report_ranks.cpp), so that no time is
// counted twice; the dataset marks them (ops.outermost_op) for the same sum.
#pragma once
#include <cstdint>
#include <vector>

namespace ptprof::model {

class Outermost {
 public:
  // Whether the span [start, end) is outermost; spans must come in order.
  bool take(int64_t start_ns, int64_t end_ns) {
    while (!ends_.empty() && ends_.back() <= start_ns) ends_.pop_back();
    const bool outer = ends_.empty();
    ends_.push_back(end_ns);
    return outer;
  }

 private:
  std::vector<int64_t> ends_;
};

}  // namespace ptprof::model
