// The operator cost of this process (agent/src/record/cost_calibration.hpp): a tiny
// training step timed with ptprof's operator callback on and off,
// interleaved; the difference of each side's fastest round, divided by the
// operators it recorded, is what ptprof adds to one operator, torch's
// callback work included. A training step, not one repeated aten::add: torch's work
// per operator once a callback is on (the floor) depends on the operator —
// an autograd node is named by demangling its type into a new std::string,
// composite ops (linear: t, addmm) nest, ops with more inputs cost more to
// dispatch — and a loop of one tiny op saw 0.35-0.5 of the difference
// measured on bench/torch_overhead.py's small-op loop. The agent sends the
// events of the timed ops to a private ring, so they never reach the trace.
// A few milliseconds, once, when torch is loaded.
#pragma once
#include <ATen/ATen.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>
#include <c10/util/StringUtil.h>
#include <time.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/function.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptprof/bridge_api.h"

namespace ptprof::torch_bridge {

// Two Linear layers, a ReLU, an MSE loss, backward, an SGD update, on CPU
// tensors. Backward calls the graph's nodes one by one (each node here feeds
// one other, so no gradient needs summing), each inside the operator the
// engine wraps it in: the autograd engine itself would start its worker
// threads and ask CUDA for its devices, which must not happen before the
// program forks. Most of torch's per-operator work in a training loop is in
// backward (on the small-op loop, a do-nothing callback adds 77 us to
// backward, 16 us to forward, 6 us to the optimizer step, torch 1.13): an
// autograd node's name is its type demangled into a new string, twice per
// node with the engine's wrapper.
class TinyTrainingStep {
 public:
  // Constant values: the program's random generator is not touched. The
  // biases are as large as the output, so that no gradient needs reducing
  // to a broadcast shape (the engine's work).
  TinyTrainingStep()
      : x_(at::full({8, 64}, 0.5)),
        y_(at::full({8, 64}, 0.25)),
        w1_(at::full({64, 64}, 0.01).requires_grad_(true)),
        b1_(at::full({8, 64}, 0.01).requires_grad_(true)),
        w2_(at::full({64, 64}, 0.01).requires_grad_(true)),
        b2_(at::full({8, 64}, 0.01).requires_grad_(true)) {}

  void run() {
    const at::Tensor loss = at::mse_loss(at::linear(at::relu(at::linear(x_, w1_, b1_)), w2_, b2_), y_);
    backward(loss);
    const at::NoGradGuard no_grad;
    for (auto* p : {&w1_, &b1_, &w2_, &b2_}) {
      p->add_(p->grad(), -0.01);
      p->mutable_grad() = at::Tensor();  // zero_grad(set_to_none=True)
    }
  }

 private:
  static void backward(const at::Tensor& loss) {
    // std::shared_ptr in torch 1.13, c10::intrusive_ptr in 2.x.
    using NodePtr = std::decay_t<decltype(loss.grad_fn())>;
    std::vector<std::pair<NodePtr, at::Tensor>> todo;
    todo.emplace_back(loss.grad_fn(), at::ones_like(loss));
    // The engine runs each node under the thread-local state it captured at
    // backward() (Engine::thread_main's ThreadLocalStateGuard): setting it
    // and putting it back rebuilds the thread's RecordFunction callback
    // cache twice per node, more work once a callback is on (a vector for
    // each scope it covers), which is part of what a callback costs backward.
    const at::ThreadLocalState captured;
    while (!todo.empty()) {
      auto [fn, grad] = std::move(todo.back());
      todo.pop_back();
      torch::autograd::variable_list out;
      {
        const at::ThreadLocalStateGuard tls(captured);
        // What the engine wraps every node in (Engine::thread_main, torch 1.13
        // and 2.x): one more operator per node, named anew each time.
        RECORD_FUNCTION(c10::str("autograd::engine::evaluate_function: ", fn->name()),
                        c10::ArrayRef<const c10::IValue>());
        out = (*fn)({std::move(grad)});
      }
      for (size_t i = 0; i < out.size() && i < fn->num_outputs(); ++i) {
        const torch::autograd::Edge& next = fn->next_edge(i);
        if (next.is_valid() && out[i].defined()) todo.emplace_back(next.function, std::move(out[i]));
      }
    }
  }

  at::Tensor x_, y_, w1_, b1_, w2_, b2_;
};

// OpenMP's count for the calling thread (omp_set_num_threads changes the
// calling thread's own setting). Weak: the bridge is not linked with OpenMP;
// at load they resolve to the runtime libtorch_cpu uses (its dependency),
// and stay null with a torch built without it.
extern "C" int omp_get_max_threads() __attribute__((weak));
extern "C" void omp_set_num_threads(int) __attribute__((weak));

// The calibration's operators run on this thread alone. With an intra-op
// thread pool (OpenMP: MKL's gemm threads the step's 8x64x64 products) this
// thread's CPU time includes its spin at the end of every parallel region,
// waiting for a worker: on a loaded machine, where the worker waits for a
// core, a round took 30-65 ms instead of 0.5 ms (on and off alike), the
// 0.1 ms the callback adds was lost in that noise, and the median came out
// <= 0 (no operator cost). One thread also starts no pool
// thread before the program may fork. Only this thread's OpenMP setting
// changes, and it is put back: not at::set_num_threads, which is
// process-wide (torch 1.13 creates its QNNPACK thread pool there; MKL's
// dynamic adjustment is pinned off). MKL follows the OpenMP count while the
// program has not set its own (it cannot have: torch is being imported).
class OneIntraOpThread {
 public:
  OneIntraOpThread() {
    if (omp_get_max_threads == nullptr || omp_set_num_threads == nullptr) return;
    was_ = omp_get_max_threads();
    if (was_ > 1) omp_set_num_threads(1);
  }
  ~OneIntraOpThread() {
    if (was_ > 1) omp_set_num_threads(was_);
  }
  OneIntraOpThread(const OneIntraOpThread&) = delete;
  OneIntraOpThread& operator=(const OneIntraOpThread&) = delete;

 private:
  int was_ = 0;
};

// This thread's CPU time: a round preempted on a shared machine is not
// charged with the wait.
inline int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Each side's fastest round, per recorded operator, over `rounds` rounds of
// `timed` (the work, returning this thread's CPU time) with the callback on
// and off, interleaved; kept across calls, so that more rounds only refine.
// The fastest: a busy machine only ever adds time to a round (another
// process's cache misses, a sibling hyperthread), so the fastest is the
// nearest to the true time, while the median of differences of single
// rounds went negative under load (no cost measured at all).
class FastestRounds {
 public:
  explicit FastestRounds(at::CallbackHandle op_callback) : op_callback_(op_callback) {}

  template <class Timed>
  void run(int rounds, Timed timed) {
    ptprof_agent_calibration_rewind();
    for (int round = 0; round < rounds; ++round) {
      const double on = timed();
      const uint32_t ops = ptprof_agent_calibration_rewind();
      at::disableCallback(op_callback_);
      const double off = timed();
      at::reenableCallback(op_callback_);
      if (ops) {
        best_on_ = std::min(best_on_, on / ops);
        best_off_ = std::min(best_off_, off / ops);
      }
    }
  }
  // The difference in picoseconds; 0 while the rounds hide it.
  uint32_t cost_ps() const {
    const double ns = best_on_ - best_off_;
    return std::isfinite(ns) && ns > 0 ? uint32_t(std::min(ns * 1000, 4e9)) : 0;
  }

 private:
  at::CallbackHandle op_callback_;
  double best_on_ = std::numeric_limits<double>::infinity();
  double best_off_ = std::numeric_limits<double>::infinity();
};

inline uint32_t measure_op_cost_ps(at::CallbackHandle op_callback) {
  constexpr int kRounds = 21, kSteps = 2, kTries = 3;
  TinyTrainingStep step;
  step.run();  // first call: dispatch caches, the names' interning
  FastestRounds fastest(op_callback);
  // A shared machine that still hides the difference gets more rounds.
  for (int attempt = 0; attempt < kTries; ++attempt) {
    fastest.run(kRounds, [&] {
      const int64_t start = thread_cpu_ns();
      for (int i = 0; i < kSteps; ++i) step.run();
      return double(thread_cpu_ns() - start);
    });
    if (const uint32_t ps = fastest.cost_ps()) return ps;
  }
  return 0;
}

// When a busy machine hides the training step's difference (it did once in
// CI, three tries of 21 rounds on a loaded two-core machine: every run's
// summary said "not measured"), an operator with nothing inside: ptprof's
// callback and torch's work to call it, against the same scope with the
// callback off, which is nearly free. The difference is most of each round,
// so no load hides it; it leaves out torch's per-operator work that only a
// real operator does once anyone listens (an autograd node's name), so it is
// a lower bound, and the agent says so.
inline uint32_t measure_empty_op_cost_ps(at::CallbackHandle op_callback) {
  constexpr int kRounds = 15, kScopes = 256;
  FastestRounds fastest(op_callback);
  fastest.run(kRounds, [] {
    const int64_t start = thread_cpu_ns();
    for (int i = 0; i < kScopes; ++i) {
      // A name the training step interned already: the program's string
      // arena gets nothing new.
      RECORD_FUNCTION("aten::relu", c10::ArrayRef<const c10::IValue>());
    }
    return double(thread_cpu_ns() - start);
  });
  return fastest.cost_ps();
}

// Measures and publishes the cost; the callback must be enabled.
inline void calibrate_op_cost(at::CallbackHandle op_callback) {
  // Each way to end without a figure says which it was: the run's summary
  // then reads "not measured", and the warning tells why.
  if (!ptprof_agent_calibration_begin()) {
    ptprof_agent_warn("the operator cost was not measured: torch was loaded inside an operator or range");
    return;
  }
  uint32_t ps = 0;
  try {
    const OneIntraOpThread one_thread;
    // The tests' stand-in for a machine too busy to time the training step
    // (tests/integration/test_cost.py): the fallback can be seen to work.
    const char* busy = std::getenv("PTPROF_TEST_CALIBRATION_BUSY");
    ps = busy != nullptr && *busy == '1' ? 0 : measure_op_cost_ps(op_callback);
    if (ps == 0 && (ps = measure_empty_op_cost_ps(op_callback)) != 0)
      ptprof_agent_warn(
          "the machine was too busy at start-up to time a real operator's cost; operators are "
          "charged with an empty one's (a lower bound)");
    if (ps == 0) ptprof_agent_warn("the operator cost was not measured: no operator timing came out above zero");
  } catch (...) {  // a torch that cannot run ops yet: no figure, nothing else changes
    at::reenableCallback(op_callback);
    ptprof_agent_warn("the operator cost was not measured: torch could not run an operator yet");
  }
  ptprof_agent_calibration_end(ps);
}

}  // namespace ptprof::torch_bridge
