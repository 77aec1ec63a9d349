// rf_counter: the reference the equivalence test compares ptprof with. A
// plain global RecordFunction callback that counts operators per (name,
// input shapes), with the same rules as ptprof's report, decided by real
// nesting (each thread's begin/end stack) rather than by timestamps:
//
//  * Steps (ptprof's default `optimizer` step rule, agent/src/runtime/runtime.cpp
//    Runtime::scope_ended and ThreadState::take_step_end in
//    agent/src/record/thread_state.hpp): each thread keeps the USER_SCOPEs open on
//    it, each with the step it began in.
//    When a USER_SCOPE named "Optimizer.step#<Class>.step" ends, the current
//    step ends, unless the innermost scope still open on that thread began in
//    the current step: then the end waits for that scope to end (the check is
//    repeated at every USER_SCOPE end of the thread). Step 0 begins when the
//    counter starts.
//  * Which steps count: an operator belongs to the step current at its begin
//    (ptprof sorts events into windows by their begin). The schedule is
//    torch.profiler.schedule's (skip_first, wait, warmup, active, repeat); each
//    cycle's active steps make one window, as in ptprof. Without a schedule
//    every step is recorded, in window 0.
//  * What is counted (analysis/src/report/report_compute.cpp): every operator and
//    user scope begun in a recorded step, except torch's filtered names
//    (profiler::_record_function_enter/_enter_new/_exit, aten::is_leaf,
//    aten::output_nr, aten::_version), which are neither counted nor nodes of
//    the tree (their children hang from their parent). Async RecordFunctions
//    are counted but are no node of the tree.
//  * The merge (torch's EventList._remove_dup_nodes, ptprof's build_tree): an
//    event whose parent has the same name and no other child is removed; the
//    parent stays, with the removed event's children. Repeated until nothing
//    changes, this is the same as: an event is removed when its direct parent
//    has the same name and exactly one child (itself). The parent of an event
//    is the innermost node open on its thread when it began, if that node is
//    in the same window (ptprof builds one tree per window file and thread).
//  * Input shapes: Python's str() of a list with one entry per input, as
//    torch's profiler classifies inputs: a defined, non-nested tensor gives
//    its sizes ("[64, 784]", "[]" for 0-dim); everything else (undefined or
//    nested tensors, scalars, tensor lists, None, strings, ...) gives "[]".
//    E.g. "[[64, 784], [], []]"; no inputs: "[]".
//
// C API (load with ctypes after `import torch`):
//   int  rf_counter_start(int shapes, int scheduled, int64 skip_first, int64 wait,
//                         int64 warmup, int64 active, int64 repeat)
//   void rf_counter_stop()                       removes the callback
//   int64 rf_counter_step()                      the current step number
//   int64 rf_counter_window_of(int64 step)       window of a step, -1: not recorded
//   int  rf_counter_write_json(const char* path) {"steps", "rows": [{"window",
//        "name", "input_shapes", "count", "folded"}], "folded", "open"}; 0 on
//        success. "count" is after the merge, "folded" what the merge removed.
//        "open": recorded events that had not ended when it was written.
//
// Builds against torch 1.13 and 2.x alike (tests/integration/torch_cxx.py).
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct Schedule {
  bool enabled = false;
  int64_t skip_first = 0, wait = 0, warmup = 0, active = 1, repeat = 0;

  // torch.profiler.schedule: the window (cycle) a recorded step is in, -1 for
  // steps it does not record (skip_first, wait, warmup, after the last cycle).
  int64_t window_of(int64_t step) const {
    if (!enabled) return 0;
    if (step < skip_first) return -1;
    step -= skip_first;
    const int64_t cycle = wait + warmup + active;
    if (cycle <= 0) return -1;
    if (repeat > 0 && step >= repeat * cycle) return -1;
    return step % cycle < wait + warmup ? -1 : step / cycle;
  }
};

bool is_filtered(const char* name) {
  static const char* const kFiltered[] = {
      "profiler::_record_function_enter",
      "profiler::_record_function_enter_new",
      "profiler::_record_function_exit",
      "aten::is_leaf",
      "aten::output_nr",
      "aten::_version",
  };
  for (const char* f : kFiltered)
    if (std::strcmp(name, f) == 0) return true;
  return false;
}

bool ends_step(const char* name) {
  // agent's StepRule::ends_step for the optimizer rule.
  const size_t n = std::strlen(name);
  return n > 20 && std::strncmp(name, "Optimizer.step#", 15) == 0 && std::strcmp(name + n - 5, ".step") == 0;
}

std::string shapes_text(const at::RecordFunction& fn) {
  std::string out = "[";
  bool first = true;
  for (const c10::IValue& v : fn.inputs()) {
    if (!first) out += ", ";
    first = false;
    out += '[';
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined() && !t.is_nested()) {
        try {
          const auto sizes = t.sizes();
          for (size_t i = 0; i < sizes.size(); ++i) {
            if (i) out += ", ";
            out += std::to_string(sizes[i]);
          }
        } catch (...) {  // symbolic sizes: torch gives [] too
        }
      }
    }
    out += ']';
  }
  out += ']';
  return out;
}

// ---- global state --------------------------------------------------------

Schedule g_schedule;
bool g_shapes = false;
std::atomic<int64_t> g_step{0};
at::CallbackHandle g_handle = at::INVALID_CALLBACK_HANDLE;

std::mutex g_mu;                                               // guards everything below
using RowKey = std::tuple<int64_t, std::string, std::string>;  // window, name, shapes
struct Counts {
  int64_t count = 0;   // events of this key, after the merge
  int64_t folded = 0;  // events of this key the merge removed
};
std::map<RowKey, Counts> g_rows;
int64_t g_folded = 0;
int64_t g_open = 0;  // tree nodes begun and not yet ended

Counts* count_row(int64_t window, const char* name, std::string shapes) {
  std::lock_guard lock(g_mu);
  Counts& c = g_rows[RowKey{window, name, std::move(shapes)}];
  ++c.count;
  return &c;  // std::map nodes are stable
}

// ---- per thread: the tree's open nodes and the open user scopes -----------

// Node::window of an async event: counted, but no node of the tree.
constexpr int64_t kNotInTree = -2;

struct Node : at::ObserverContext {
  std::string name;
  int64_t window = -1;    // -1: not recorded (but still nests its children)
  Counts* row = nullptr;  // its counts, when recorded
  uint32_t children = 0;  // in the tree
  // The first child, as it was at its begin (its Node dies with its
  // RecordFunction, before ours ends): whether it has our name, and its count.
  bool first_child_same_name = false;
  Counts* first_child_row = nullptr;
};

struct ThreadState {
  std::vector<Node*> open;           // tree nodes, innermost last
  std::vector<int64_t> scope_began;  // user scopes open: step each began in
  bool pending_step_end = false;
};

thread_local ThreadState t_state;

// A user scope ended on this thread: the step rule (Runtime::scope_ended).
void scope_ended(ThreadState& t, const char* name) {
  if (!t.scope_began.empty()) t.scope_began.pop_back();
  if (ends_step(name)) t.pending_step_end = true;
  const int64_t step = g_step.load();
  const bool inside_scope_of_step = !t.scope_began.empty() && t.scope_began.back() >= step;
  if (t.pending_step_end && !inside_scope_of_step) {
    t.pending_step_end = false;
    g_step.fetch_add(1);
  }
}

std::unique_ptr<at::ObserverContext> on_begin(const at::RecordFunction& fn) {
  ThreadState& t = t_state;
  const bool user_scope = fn.scope() == at::RecordScope::USER_SCOPE;
  if (user_scope) t.scope_began.push_back(g_step.load());
  const char* name = fn.name();
  if (is_filtered(name)) return nullptr;  // on_end still runs (the step rule)
  const int64_t window = g_schedule.window_of(g_step.load());
  auto node = std::make_unique<Node>();
  node->name = name;
  node->window = window;
  if (window >= 0) node->row = count_row(window, name, g_shapes ? shapes_text(fn) : std::string("[]"));
  if (fn.isAsync()) {
    node->window = kNotInTree;  // counted above
    return node;
  }
  if (!t.open.empty() && t.open.back()->window == window && window >= 0) {
    Node* p = t.open.back();
    if (p->children++ == 0) {
      p->first_child_same_name = p->name == node->name;
      p->first_child_row = node->row;
    }
  }
  t.open.push_back(node.get());
  if (window >= 0) {
    std::lock_guard lock(g_mu);
    ++g_open;
  }
  return node;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  ThreadState& t = t_state;
  auto* node = static_cast<Node*>(ctx);
  if (node && node->window != kNotInTree) {
    // Ends come innermost first; a scope that ends out of order is taken out
    // of the middle.
    for (size_t i = t.open.size(); i-- > 0;) {
      if (t.open[i] == node) {
        t.open.erase(t.open.begin() + long(i));
        break;
      }
    }
    // The merge, decided when the parent ends and its children are known
    // (a child still open, ending out of order, is taken back all the same).
    if (node->window >= 0) {
      std::lock_guard lock(g_mu);
      --g_open;
      if (node->children == 1 && node->first_child_same_name) {
        --node->first_child_row->count;
        ++node->first_child_row->folded;
        ++g_folded;
      }
    }
  }
  if (fn.scope() == at::RecordScope::USER_SCOPE) scope_ended(t, fn.name());
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int rf_counter_start(int shapes, int scheduled, int64_t skip_first, int64_t wait,
                                                            int64_t warmup, int64_t active, int64_t repeat) {
  if (g_handle != at::INVALID_CALLBACK_HANDLE) return 1;
  g_shapes = shapes != 0;
  g_schedule.enabled = scheduled != 0;
  g_schedule.skip_first = skip_first;
  g_schedule.wait = wait;
  g_schedule.warmup = warmup;
  g_schedule.active = active;
  g_schedule.repeat = repeat;
  g_handle = at::addGlobalCallback(at::RecordFunctionCallback(&on_begin, &on_end).needsInputs(g_shapes));
  return 0;
}

__attribute__((visibility("default"))) void rf_counter_stop() {
  if (g_handle == at::INVALID_CALLBACK_HANDLE) return;
  at::removeCallback(g_handle);
  g_handle = at::INVALID_CALLBACK_HANDLE;
}

__attribute__((visibility("default"))) int64_t rf_counter_step() { return g_step.load(); }

__attribute__((visibility("default"))) int64_t rf_counter_window_of(int64_t step) { return g_schedule.window_of(step); }

// JSON quoting of its own (not analysis/src/text/text_util.hpp's): the counter is
// compiled against torch alone and shares no code with what it checks.
__attribute__((visibility("default"))) int rf_counter_write_json(const char* path) {
  auto quote = [](std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += char(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
    out += '"';
  };
  std::string out;
  {
    std::lock_guard lock(g_mu);
    out = "{\"steps\": " + std::to_string(g_step.load()) + ", \"folded\": " + std::to_string(g_folded) +
          ", \"open\": " + std::to_string(g_open) + ", \"rows\": [";
    bool first = true;
    for (const auto& [key, c] : g_rows) {
      if (c.count == 0 && c.folded == 0) continue;
      out += first ? "\n" : ",\n";
      first = false;
      out += "{\"window\": " + std::to_string(std::get<0>(key)) + ", \"name\": ";
      quote(out, std::get<1>(key));
      out += ", \"input_shapes\": ";
      quote(out, std::get<2>(key));
      out += ", \"count\": " + std::to_string(c.count) + ", \"folded\": " + std::to_string(c.folded) + "}";
    }
    out += "]}\n";
  }
  FILE* f = std::fopen(path, "w");
  if (!f) return 1;
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  return (std::fclose(f) == 0 && ok) ? 0 : 1;
}

}  // extern "C"
