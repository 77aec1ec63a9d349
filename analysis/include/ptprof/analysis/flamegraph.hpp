// Folded stacks ("frame;frame;...;leaf value" lines, innermost last), the
// input of flamegraph.pl, speedscope and Perfetto, from traces recorded with
// --with-stack (or --python-attribution): for each op, its Python frames
// (outermost first), then its native frames below the interpreter (named
// from the modules' ELF symbols, "function [module]"), then the op's name.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ptprof/trace.hpp"

namespace ptprof::stacks::flamegraph {

enum class Metric : uint8_t {
  SelfCpu,     // each op's self CPU time, ns
  SelfCuda,    // the GPU time of the kernels, copies and sets each op launched itself, ns
  AllocBytes,  // bytes each op allocated itself (--profile-memory)
};
std::optional<Metric> parse_metric(std::string_view name);  // self_cpu, self_cuda, alloc_bytes

class Builder {
 public:
  explicit Builder(Metric metric);
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  void add(const trace::Trace& t);  // need not outlive the call
  // The folded lines, sorted; ops whose metric is 0 are left out.
  std::string finish() &&;
  uint64_t ops_with_stack() const;  // ops that carried a stack

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptprof::stacks::flamegraph
