// torch's memory categories (torch/profiler/_memory_profiler.py) on ptprof's
// records. Each step below names the torch function whose rule it follows;
// the rules are followed as written, quirks included, so that the bytes per
// category equal export_memory_timeline's for the same program.
#include "ptprof/analysis/memory_categories.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "memory/memory_dataflow.hpp"
#include "ptprof/record.hpp"

namespace ptprof::memory {

std::string_view category_name(Category c) {
  switch (c) {
    case Category::Parameter:
      return "parameter";
    case Category::OptimizerState:
      return "optimizer state";
    case Category::Input:
      return "input";
    case Category::Temporary:
      return "temporary";
    case Category::Activation:
      return "activation";
    case Category::Gradient:
      return "gradient";
    case Category::AutogradDetail:
      return "autograd detail";
    case Category::Unknown:
      break;
  }
  return "unknown";
}

std::array<int64_t, kCategories> CategoryTimeline::at(int64_t t_us) const {
  auto it = std::upper_bound(times_us.begin(), times_us.end(), t_us);
  if (it == times_us.begin()) return {};
  return bytes[size_t(it - times_us.begin()) - 1];
}

namespace {

using detail::Graph;
using detail::Key;
using detail::KeyVersion;
using detail::Node;

// CategoryDict: a category by id (every storage a tensor ever had), by key
// (one storage), or by (key, version).
class Categories {
 public:
  void set_by_id(const Key& k, Category c) {
    auto& e = values_[k.id];
    e.by_id = c;
    e.id_keys.insert(k);
  }
  void set_by_key(const Key& k, Category c) { values_[k.id].by_key[k] = c; }
  void set_by_version(const Key& k, int64_t v, Category c) { values_[k.id].by_version[{k, v}] = c; }
  void setdefault_by_version(const Key& k, int64_t v, Category c) {
    values_[k.id].by_version.emplace(KeyVersion{k, v}, c);
  }
  std::optional<Category> get(const Key& k, int64_t v) const {
    auto it = values_.find(k.id);
    if (it == values_.end()) return std::nullopt;
    const Element& e = it->second;
    if (e.by_id) return e.by_id;
    if (auto b = e.by_key.find(k); b != e.by_key.end()) return b->second;
    if (auto b = e.by_version.find({k, v}); b != e.by_version.end()) return b->second;
    return std::nullopt;
  }
  bool is(const KeyVersion& kv, Category c) const { return get(kv.key, kv.version) == c; }
  template <class F>
  void each_id_key(F&& f) const {
    for (const auto& [id, e] : values_)
      for (const Key& k : e.id_keys) f(k);
  }

 private:
  struct Element {
    std::optional<Category> by_id;
    std::map<Key, Category> by_key;
    std::map<KeyVersion, Category> by_version;
    std::set<Key> id_keys;
  };
  std::unordered_map<int64_t, Element> values_;
};

class Profile {
 public:
  explicit Profile(const Graph& g) : g_(g) {
    set_gradients_and_temporaries();
    set_parameters_using_python_tracer();
    set_inputs();
    set_parameters_using_data_flow();
    set_activations();
    set_optimizer_state();
    set_autograd_detail();
  }

  const Categories& categories() const { return cats_; }

  // _category_snapshot: every (key, version) the graph names, and every key
  // a category was set for by id.
  std::map<KeyVersion, std::optional<Category>> snapshot() const {
    std::set<KeyVersion> all;
    for (const auto& n : g_.flow) {
      for (const auto& [k, in] : n.inputs()) all.insert({k, in.second});
      for (const Key& k : n.intermediates()) all.insert({k, 0});
      for (const auto& [k, v] : n.outputs()) all.insert({k, v});
    }
    cats_.each_id_key([&](const Key& k) { all.insert({k, 0}); });
    std::map<KeyVersion, std::optional<Category>> out;
    for (const KeyVersion& kv : all) out.emplace(kv, cats_.get(kv.key, kv.version));
    return out;
  }

 private:
  bool in_backward(const detail::FlowNode& n) const { return g_.in_backward(n.event); }

  std::set<KeyVersion> input_set(const detail::FlowNode& n) const {
    std::set<KeyVersion> s;
    for (const auto& [k, in] : n.inputs()) s.insert({k, in.second});
    return s;
  }
  std::set<KeyVersion> output_set(const detail::FlowNode& n) const {
    std::set<KeyVersion> s;
    for (const auto& [k, v] : n.outputs()) s.insert({k, v});
    return s;
  }

  void set_gradients_and_temporaries() {
    g_.each_gradient([&](const std::optional<Key>&, const Key& grad) { cats_.set_by_id(grad, Category::Gradient); });
    for (const auto& n : g_.flow)
      for (const Key& k : n.intermediates()) cats_.set_by_key(k, Category::Temporary);
  }

  void set_parameters_using_python_tracer() {
    g_.each_parameter([&](const Key& p) { cats_.set_by_id(p, Category::Parameter); });
  }

  // _any_version_depends_on_gradient: ids of tensors that take, or will take,
  // a gradient or parameter as input, to a fixed point.
  std::set<int64_t> any_version_depends_on_gradient() const {
    std::set<int64_t> depends;
    while (true) {
      const size_t before = depends.size();
      for (const auto& n : g_.flow) {
        std::vector<int64_t> ids;
        for (const auto& [k, in] : n.inputs()) {
          const auto c = cats_.get(k, in.second);
          if (c == Category::Gradient || c == Category::Parameter || depends.contains(k.id)) ids.push_back(k.id);
        }
        if (!ids.empty()) {
          depends.insert(ids.begin(), ids.end());
          for (const auto& [k, v] : n.outputs()) depends.insert(k.id);
        }
      }
      if (depends.size() == before) return depends;
    }
  }

  void set_inputs() {
    const std::set<int64_t> depends = any_version_depends_on_gradient();
    std::set<KeyVersion> produces_gradient;
    for (auto it = g_.flow.rbegin(); it != g_.flow.rend(); ++it) {
      std::set<KeyVersion> tensors = input_set(*it);
      for (const KeyVersion& kv : output_set(*it)) tensors.insert(kv);
      const bool any = std::any_of(tensors.begin(), tensors.end(), [&](const KeyVersion& kv) {
        const auto c = cats_.get(kv.key, kv.version);
        return c == Category::Gradient || c == Category::Parameter || produces_gradient.contains(kv);
      });
      if (any) produces_gradient.insert(tensors.begin(), tensors.end());
    }
    std::set<KeyVersion> candidates = produces_gradient;
    for (const auto& n : g_.flow)
      if (in_backward(n))
        for (const KeyVersion& kv : output_set(n)) candidates.erase(kv);
    for (const KeyVersion& kv : candidates)
      if (!depends.contains(kv.key.id)) cats_.setdefault_by_version(kv.key, kv.version, Category::Input);
  }

  void set_parameters_using_data_flow() {
    const auto snap = snapshot();
    std::set<KeyVersion> candidate_parameters;
    std::set<KeyVersion> candidate_fwd;
    for (const auto& [kv, c] : snap)
      if (c == Category::Input) candidate_fwd.insert(kv);
    auto is_gradient = [&](const KeyVersion& kv) { return cats_.is(kv, Category::Gradient); };
    for (const auto& n : g_.flow) {
      const std::set<KeyVersion> inputs = input_set(n);
      const std::set<KeyVersion> outputs = output_set(n);
      if (in_backward(n) || std::any_of(inputs.begin(), inputs.end(), is_gradient) ||
          std::any_of(outputs.begin(), outputs.end(), is_gradient))
        continue;
      const bool depends_on_input =
          std::any_of(inputs.begin(), inputs.end(), [&](const KeyVersion& kv) { return candidate_fwd.contains(kv); });
      if (!depends_on_input) continue;
      candidate_fwd.insert(outputs.begin(), outputs.end());
      for (const KeyVersion& kv : inputs)
        if (!candidate_fwd.contains(kv)) candidate_parameters.insert(kv);
    }
    std::set<KeyVersion> used_for_gradient;
    for (auto it = g_.flow.rbegin(); it != g_.flow.rend(); ++it) {
      const std::set<KeyVersion> outputs = output_set(*it);
      if (std::any_of(outputs.begin(), outputs.end(),
                      [&](const KeyVersion& kv) { return is_gradient(kv) || used_for_gradient.contains(kv); })) {
        const std::set<KeyVersion> inputs = input_set(*it);
        used_for_gradient.insert(inputs.begin(), inputs.end());
      }
    }
    std::set<int64_t> parameter_ids;
    for (const KeyVersion& kv : candidate_parameters)
      if (used_for_gradient.contains(kv)) parameter_ids.insert(kv.key.id);
    const std::set<int64_t> depends = any_version_depends_on_gradient();
    for (const auto& [kv, c] : snap)
      if (parameter_ids.contains(kv.key.id) && depends.contains(kv.key.id))
        cats_.set_by_id(kv.key, Category::Parameter);
  }

  void set_activations() {
    for (const auto& n : g_.flow) {
      if (in_backward(n)) continue;
      bool required = false, other = false;
      for (const auto& [k, in] : n.inputs()) {
        const auto c = cats_.get(k, in.second);
        if (c == Category::Input || c == Category::Activation)
          required = true;
        else if (c != Category::Parameter && c != Category::Temporary)
          other = true;  // None included
      }
      if (required && !other)
        for (const auto& [k, v] : n.outputs()) cats_.setdefault_by_version(k, v, Category::Activation);
    }
  }

  void set_optimizer_state() {
    g_.each_optimizer_state([&](const Key& k) { cats_.set_by_id(k, Category::OptimizerState); });
  }

  void set_autograd_detail() {
    for (const auto& n : g_.flow) {
      if (!in_backward(n)) continue;
      for (const auto& [k, v] : n.outputs()) {
        if (v == 0) {
          cats_.setdefault_by_version(k, v, Category::AutogradDetail);
          continue;
        }
        const auto prior = cats_.get(k, v - 1);
        if (!prior || prior == Category::AutogradDetail) cats_.setdefault_by_version(k, v, Category::AutogradDetail);
      }
    }
  }

  const Graph& g_;
  Categories cats_;
};

// MemoryProfile.timeline then MemoryProfileTimeline._coalesce_timeline.
enum class TimelineAction : uint8_t { Preexisting = 1, Create = 2, IncrementVersion = 3, Destroy = 4 };
struct TimelineEntry {
  int64_t t = 0;  // ns; -1: before the profile
  TimelineAction action = TimelineAction::Create;
  std::optional<Key> key;  // none: memory no tensor names (device only)
  int64_t version = 0;
  int8_t device_type = 0;
  int8_t device_index = -1;
  int64_t bytes = 0;
};

std::vector<TimelineEntry> timeline(const Graph& g, const Profile& p) {
  std::vector<TimelineEntry> out;
  std::map<std::pair<Key, bool>, int64_t> allocation_times;
  std::set<std::tuple<uint64_t, int8_t, int8_t>> live_unknown;
  g.each_allocation_dfs([&](const Node& n) {
    const trace::MemoryInfo& m = *n.mem;
    const bool is_allocation = m.bytes > 0;
    if (n.alloc_key) {
      allocation_times[{*n.alloc_key, is_allocation}] = n.start;
      return;
    }
    const auto where = std::make_tuple(m.ptr, m.device_type, m.device_index);
    TimelineEntry e{n.start, TimelineAction::Create, std::nullopt, 0, m.device_type, m.device_index, m.bytes};
    if (is_allocation) {
      if (!live_unknown.insert(where).second) e.action = TimelineAction::IncrementVersion;
      out.push_back(e);
    } else {
      e.action = TimelineAction::Destroy;
      e.bytes = -m.bytes;
      out.push_back(e);
      if (live_unknown.erase(where) == 0) {
        e.t = -1;
        e.action = TimelineAction::Preexisting;
        out.push_back(e);
      }
    }
  });

  const auto snap = p.snapshot();
  std::map<Key, int64_t> last_version;
  for (const auto& [kv, c] : snap) last_version[kv.key] = kv.version;  // sorted: the last is the largest
  auto keyed = [&](int64_t t, TimelineAction a, const Key& k, int64_t v) {
    out.push_back({t, a, k, v, k.device_type, k.device_index, g.size_of(k)});
  };
  for (const auto& [kv, c] : snap)
    if (kv.version == 0 && !allocation_times.contains({kv.key, true}))
      keyed(-1, TimelineAction::Preexisting, kv.key, kv.version);
  for (const auto& n : g.flow) {
    for (const auto& [k, edge] : n.edges) {
      if (edge.is_allocation()) {
        if (auto it = allocation_times.find({k, true}); it != allocation_times.end())
          keyed(it->second, TimelineAction::Create, k, 0);
      } else if (edge.mutated == detail::Mutated::Yes) {
        keyed(n.start(), TimelineAction::IncrementVersion, k, *edge.input_version);
      }
      if (edge.is_deletion()) {
        if (auto it = allocation_times.find({k, false}); it != allocation_times.end())
          keyed(it->second, TimelineAction::Destroy, k, last_version[k]);
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const TimelineEntry& a, const TimelineEntry& b) {
    return a.t != b.t ? a.t < b.t : uint8_t(a.action) < uint8_t(b.action);
  });
  return out;
}

size_t category_index(const std::optional<Category>& c) { return size_t(c.value_or(Category::Unknown)); }

std::vector<CategoryTimeline> coalesce(const std::vector<TimelineEntry>& entries, const Categories& cats, int32_t pid) {
  std::map<std::pair<int8_t, int8_t>, CategoryTimeline> devices;
  std::map<std::pair<int8_t, int8_t>, int64_t> t_min;
  for (const TimelineEntry& e : entries) {
    const auto dev = std::make_pair(e.device_type, e.device_index);
    CategoryTimeline& tl = devices[dev];
    tl.pid = pid;
    tl.device_type = e.device_type;
    tl.device_index = e.device_index;
    const int64_t t = e.t == -1 ? -1 : e.t / 1000;  // torch: int(t / 1000), ns to us
    int64_t& tmin = t_min.try_emplace(dev, -1).first->second;
    if (tmin == -1 || (t < tmin && t > 0)) tmin = t;
    if (tl.times_us.empty()) {
      tl.times_us.push_back(t);
      tl.bytes.push_back({});
    } else if (t != tl.times_us.back()) {
      tl.times_us.push_back(t);
      tl.bytes.push_back(tl.bytes.back());
    }
    auto& sizes = tl.bytes.back();
    auto category = [&](int64_t version) {
      return e.key ? category_index(cats.get(*e.key, version)) : size_t(Category::Unknown);
    };
    switch (e.action) {
      case TimelineAction::Preexisting:
      case TimelineAction::Create:
        sizes[category(e.version)] += e.bytes;
        break;
      case TimelineAction::IncrementVersion:
        sizes[category(e.version)] -= e.bytes;
        sizes[category(e.version + 1)] += e.bytes;
        break;
      case TimelineAction::Destroy:
        sizes[category(e.version)] -= e.bytes;
        break;
    }
  }
  std::vector<CategoryTimeline> out;
  for (auto& [dev, tl] : devices) {
    for (int64_t& t : tl.times_us)
      if (t < 0) t = t_min[dev];
    out.push_back(std::move(tl));
  }
  return out;
}

}  // namespace

CategoryResult memory_categories(const trace::Trace& t) {
  CategoryResult r;
  if (t.tensor_groups.empty()) {
    r.unavailable =
        "no tensor identity was recorded: memory categories need `ptprof run --profile-memory --record-shapes`";
    return r;
  }
  for (uint32_t process = 0; process < t.processes.size(); ++process) {
    Graph g(t, process);
    if (g.empty()) continue;
    const Profile p(g);
    auto devices = coalesce(timeline(g, p), p.categories(), t.processes[process].pid);
    for (auto& d : devices) r.timelines.push_back(std::move(d));
  }
  return r;
}

}  // namespace ptprof::memory
