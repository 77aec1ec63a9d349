// `export --perfetto`: trace files to Perfetto's protobuf TrackEvent format.
// One packet sequence carries everything: a track per process and per thread,
// interned names and categories, and per event a SLICE_BEGIN and a SLICE_END
// packet (TrackEvent has no complete events). Slices on a track must nest, so
// each file's events are sorted per thread and ends are emitted in stack
// order (model/event_tree.hpp's nesting; steps widened as in the Chrome
// export, step_spans.hpp; any other partial overlap is cut at the enclosing
// slice's end, with a warning); files are read one at a time. torch's fwdbwd
// links (fwdbwd_flows.hpp) are flows: the forward op's slice starts one
// (flow_ids), its backward op's ends it (terminating_flow_ids); they are
// found within each file (a forward op and its backward op share a window).
// CUDA events carry the Chrome export's: Kineto's categories, its args as
// debug annotations (gpu_event_args.hpp lists them for both exports; ints as
// int_value, floats as double_value, texts and grids as string_value) with
// the launching op's "External id" (ops that launched CUDA carry theirs), and
// the ac2g flow from each launch to its first GPU work (launch_links.hpp),
// found in a pass over all files before the write, as the Chrome export's.
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "export/chrome_event_format.hpp"
#include "export/export_inputs.hpp"
#include "export/fwdbwd_flows.hpp"
#include "export/gpu_event_args.hpp"
#include "export/launch_links.hpp"
#include "export/perfetto_fields.hpp"
#include "export/protobuf_encode.hpp"
#include "export/step_spans.hpp"
#include "model/event_tree.hpp"
#include "ptprof/analysis/export.hpp"
#include "ptprof/analysis/output_file.hpp"
#include "ptprof/analysis/trace_file.hpp"
#include "ptprof/cuda_status.hpp"
#include "text/utf8.hpp"

namespace ptprof::exporting {

using namespace detail;
namespace pf = detail::perfetto;

namespace {

constexpr uint32_t kSequenceId = 1;
// Categories are fixed (chrome_category's): interned once, in the first
// packet, iid = index + 1.
constexpr std::array<std::string_view, 9> kCategories = {"cpu_op",      "user_annotation", "cuda_runtime",
                                                         "cuda_driver", "kernel",          "gpu_memcpy",
                                                         "gpu_memset",  "cuda_sync",       "overhead"};
// The annotation names of every op, interned in the first packet too (iid =
// index + 1 in kOpAnnotations); the GPU args' names on first use.
enum AnnotationIid : uint64_t {
  kInputDims = 1,
  kSequenceNumber = 2,
  kFwdThreadId = 3,
  kTruncated = 4,
  kExternalId = 5
};
constexpr std::array<std::string_view, 5> kOpAnnotations = {"Input Dims", "Sequence number", "Fwd thread id",
                                                            "Truncated", "External id"};
// ac2g flow ids (launch_links.hpp's: a correlation id, or a pid and one) in
// a space of their own, apart from the fwdbwd flows' small counters.
constexpr uint64_t kLaunchFlowBit = uint64_t(1) << 63;

uint64_t category_iid(std::string_view category) {
  for (size_t i = 0; i < kCategories.size(); ++i)
    if (kCategories[i] == category) return i + 1;
  return 2;  // user_annotation, chrome_category's default
}

// Interns strings into one of InternedData's tables: iids from 1, in order of
// first use; intern() says whether the string is new (and must be emitted).
class InternTable {
 public:
  uint64_t intern(const std::string& s, bool* added) {
    auto [it, inserted] = ids_.try_emplace(s, ids_.size() + 1);
    *added = inserted;
    return it->second;
  }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
};

// Per input file: its string ids to iids, filled on first use (0 = not yet).
struct FileIids {
  std::vector<uint64_t> names, shapes;
  std::vector<uint64_t> thread_tracks;
};

class PerfettoWriter {
 public:
  // `links`: the launch links of all inputs, with the Chrome export's ids.
  PerfettoWriter(std::unique_ptr<OutputFile> out, const LaunchLinks& links) : out_(std::move(out)), links_(links) {}

  void write_preamble(const InputSummary& in);
  // Writes the events of one file; returns how many.
  uint64_t write_file(const trace::Trace& t);
  Status finish() { return out_->finish(); }
  uint64_t overlaps_cut() const { return overlaps_cut_; }

 private:
  void emit_packet() {
    frame_.clear();
    pb::put_bytes(frame_, pf::trace::kPacket, packet_);
    out_->write(frame_);
  }
  void start_event_packet(int64_t ts) {
    packet_.clear();
    pb::put_varint(packet_, pf::packet::kTimestamp, uint64_t(ts));
    pb::put_varint(packet_, pf::packet::kTrustedPacketSequenceId, kSequenceId);
    pb::put_varint(packet_, pf::packet::kSequenceFlags, pf::packet::kSeqNeedsIncrementalState);
  }
  // `export_id` is the file's (FwdBwdFlows'), `chrome_id` the Chrome export's.
  void write_begin(const trace::Trace& t, const trace::Event& e, uint64_t track, bool instant, const FwdBwdFlows& flows,
                   uint64_t export_id, uint64_t chrome_id);
  // Kineto's External id, its GPU args and its ac2g flow end, where `e` has them.
  void add_cuda_facts(const trace::Trace& t, const trace::Event& e, uint64_t chrome_id);
  void add_arg(const EventArg& arg);
  uint64_t annotation_iid(std::string_view name);
  void write_end(int64_t ts, uint64_t track);
  uint64_t name_iid(const trace::Trace& t, const trace::Event& e);
  uint64_t shapes_iid(const trace::Trace& t, uint32_t shapes);
  void intern_new(uint32_t table, uint64_t iid, std::string_view text);
  void add_annotation(uint64_t name_iid, int64_t value);
  void add_double_annotation(uint64_t name_iid, double value);
  void add_string_annotation(uint64_t name_iid, std::string_view value);
  void add_interned_annotation(uint64_t name_iid, uint64_t value_iid);
  uint64_t thread_track(const trace::Trace& t, uint32_t thread);

  std::unique_ptr<OutputFile> out_;
  std::string packet_, frame_, event_, nested_, interned_;
  InternTable names_, shapes_, annotation_names_;  // whole trace
  const LaunchLinks& links_;
  GpuEventArgs gpu_args_;
  std::vector<EventArg> args_;  // the current event's, reused
  // The iids of the args' names (literals: their views stay valid).
  std::unordered_map<std::string_view, uint64_t> arg_iids_;
  FileIids file_;  // the current file's
  // Track uuids, small so that every event's track_uuid takes a byte or two.
  std::map<int32_t, uint64_t> process_tracks_;
  std::map<std::pair<int32_t, int32_t>, uint64_t> thread_tracks_;
  uint64_t next_uuid_ = 1;  // 0 is Perfetto's trace-global track
  int64_t offset_ns_ = 0;   // the current file's realtime offset
  uint64_t overlaps_cut_ = 0;
  uint64_t flows_before_ = 0;  // flow ids of earlier files: ids stay unique across files
  uint64_t ids_before_ = 0;    // Chrome export ids of earlier files' events
};

void PerfettoWriter::write_preamble(const InputSummary& in) {
  // Interned categories and annotation names, clearing the sequence's state.
  interned_.clear();
  auto intern = [&](uint32_t field, uint64_t iid, std::string_view name) {
    nested_.clear();
    pb::put_varint(nested_, pf::interned_data::kIid, iid);
    pb::put_bytes(nested_, pf::interned_data::kName, name);
    pb::put_bytes(interned_, field, nested_);
  };
  for (size_t i = 0; i < kCategories.size(); ++i) intern(pf::interned_data::kEventCategories, i + 1, kCategories[i]);
  for (std::string_view name : kOpAnnotations) {
    bool added = false;
    intern(pf::interned_data::kDebugAnnotationNames, annotation_names_.intern(std::string(name), &added), name);
  }
  gpu_args_.set_devices(in.gpu_devices);
  packet_.clear();
  pb::put_varint(packet_, pf::packet::kTrustedPacketSequenceId, kSequenceId);
  pb::put_varint(packet_, pf::packet::kSequenceFlags, pf::packet::kSeqIncrementalStateCleared);
  pb::put_bytes(packet_, pf::packet::kInternedData, interned_);
  emit_packet();

  auto descriptor = [&](uint64_t uuid, uint64_t parent, uint32_t field, const std::string& body) {
    std::string d;
    pb::put_varint(d, pf::track_descriptor::kUuid, uuid);
    if (parent) pb::put_varint(d, pf::track_descriptor::kParentUuid, parent);
    pb::put_bytes(d, field, body);
    packet_.clear();
    pb::put_varint(packet_, pf::packet::kTrustedPacketSequenceId, kSequenceId);
    pb::put_bytes(packet_, pf::packet::kTrackDescriptor, d);
    emit_packet();
  };
  for (const ProcessInfo& p : in.processes) {
    uint64_t uuid = process_tracks_[p.pid] = next_uuid_++;
    std::string body;
    pb::put_varint(body, pf::process_descriptor::kPid, uint64_t(int64_t(p.pid)));
    pb::put_bytes(body, pf::process_descriptor::kCmdline, text::valid_utf8(p.cmdline));
    pb::put_bytes(body, pf::process_descriptor::kProcessName, text::valid_utf8(p.name));
    descriptor(uuid, 0, pf::track_descriptor::kProcess, body);
  }
  for (const ThreadInfo& th : in.threads) {
    uint64_t uuid = thread_tracks_[{th.pid, th.tid}] = next_uuid_++;
    std::string body;
    pb::put_varint(body, pf::thread_descriptor::kPid, uint64_t(int64_t(th.pid)));
    pb::put_varint(body, pf::thread_descriptor::kTid, uint64_t(int64_t(th.tid)));
    pb::put_bytes(body, pf::thread_descriptor::kThreadName, text::valid_utf8(th.name));
    descriptor(uuid, process_tracks_[th.pid], pf::track_descriptor::kThread, body);
  }
}

// Interned data travels in the packet of the first event that uses it.
void PerfettoWriter::intern_new(uint32_t table, uint64_t iid, std::string_view text) {
  nested_.clear();
  pb::put_varint(nested_, pf::interned_data::kIid, iid);
  pb::put_bytes(nested_, pf::interned_data::kName, text);
  pb::put_bytes(interned_, table, nested_);
}

uint64_t PerfettoWriter::name_iid(const trace::Trace& t, const trace::Event& e) {
  bool unnamed_step = e.kind == trace::EventKind::Step && (e.name == 0 || e.name >= t.strings.size());
  if (!unnamed_step && e.name < file_.names.size() && file_.names[e.name]) return file_.names[e.name];
  std::string name = unnamed_step ? "ProfilerStep#" + std::to_string(e.arg)
                                  : text::valid_utf8(e.name < t.strings.size() ? t.strings[e.name] : "");
  bool added = false;
  uint64_t iid = names_.intern(name, &added);
  if (added) intern_new(pf::interned_data::kEventNames, iid, name);
  if (!unnamed_step && e.name < file_.names.size()) file_.names[e.name] = iid;
  return iid;
}

uint64_t PerfettoWriter::shapes_iid(const trace::Trace& t, uint32_t shapes) {
  if (file_.shapes[shapes]) return file_.shapes[shapes];
  const std::string dims = text::valid_utf8(t.strings[shapes]);
  bool added = false;
  uint64_t iid = shapes_.intern(dims, &added);
  if (added) intern_new(pf::interned_data::kDebugAnnotationStringValues, iid, dims);
  return file_.shapes[shapes] = iid;
}

uint64_t PerfettoWriter::thread_track(const trace::Trace& t, uint32_t thread) {
  if (thread >= t.threads.size()) return 0;  // the trace-global track
  uint64_t& uuid = file_.thread_tracks[thread];
  if (!uuid) {
    const trace::Thread& th = t.threads[thread];
    int32_t pid = th.process < t.processes.size() ? t.processes[th.process].pid : 0;
    auto it = thread_tracks_.find({pid, th.tid});
    uuid = it == thread_tracks_.end() ? 0 : it->second;
  }
  return uuid;
}

void PerfettoWriter::add_annotation(uint64_t name, int64_t value) {
  nested_.clear();
  pb::put_varint(nested_, pf::debug_annotation::kNameIid, name);
  pb::put_varint(nested_, pf::debug_annotation::kIntValue, uint64_t(value));
  pb::put_bytes(event_, pf::track_event::kDebugAnnotations, nested_);
}

void PerfettoWriter::add_double_annotation(uint64_t name, double value) {
  nested_.clear();
  pb::put_varint(nested_, pf::debug_annotation::kNameIid, name);
  pb::put_fixed64(nested_, pf::debug_annotation::kDoubleValue, std::bit_cast<uint64_t>(value));
  pb::put_bytes(event_, pf::track_event::kDebugAnnotations, nested_);
}

void PerfettoWriter::add_string_annotation(uint64_t name, std::string_view value) {
  nested_.clear();
  pb::put_varint(nested_, pf::debug_annotation::kNameIid, name);
  pb::put_bytes(nested_, pf::debug_annotation::kStringValue, value);
  pb::put_bytes(event_, pf::track_event::kDebugAnnotations, nested_);
}

uint64_t PerfettoWriter::annotation_iid(std::string_view name) {
  uint64_t& cached = arg_iids_[name];
  if (cached) return cached;
  bool added = false;
  cached = annotation_names_.intern(std::string(name), &added);
  if (added) intern_new(pf::interned_data::kDebugAnnotationNames, cached, name);
  return cached;
}

// As the Chrome export renders the same list (append_json_args), in types
// Perfetto shows: a float as the double its shortest text reads as, so that
// both exports give the same number; a grid as the text "[x, y, z]".
void PerfettoWriter::add_arg(const EventArg& arg) {
  const uint64_t name = annotation_iid(arg.name);
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, FloatArg>) {
          std::string text;
          append_float(text, v.value);
          double d = 0;
          std::from_chars(text.data(), text.data() + text.size(), d);
          add_double_annotation(name, d);
        } else if constexpr (std::is_same_v<V, double>) {
          add_double_annotation(name, v);
        } else if constexpr (std::is_same_v<V, std::string_view>) {
          add_string_annotation(name, text::valid_utf8(v));
        } else if constexpr (std::is_same_v<V, Dim3Arg>) {
          std::string text = "[";
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) text += ", ";
            text += std::to_string(v[i]);
          }
          text += ']';
          add_string_annotation(name, text);
        } else {
          add_annotation(name, int64_t(v));
        }
      },
      arg.value);
}

void PerfettoWriter::add_cuda_facts(const trace::Trace& t, const trace::Event& e, uint64_t chrome_id) {
  if (e.kind == trace::EventKind::Op) {
    // The id a CUDA event names its launching op by; only ops that may
    // have launched CUDA (a join key) carry it.
    if (e.arg != 0) add_annotation(kExternalId, int64_t(chrome_id));
    return;
  }
  if (!cuda_info(t, e)) return;
  add_annotation(kExternalId, int64_t(links_.launching_op(t, e).value_or(chrome_id)));
  gpu_args_.list(t, e, offset_ns_, args_);
  for (const EventArg& a : args_) add_arg(a);
  if (const std::optional<uint64_t> id = links_.flow(t, e, chrome_id))
    pb::put_fixed64(event_, is_cuda_call(e.kind) ? pf::track_event::kFlowIds : pf::track_event::kTerminatingFlowIds,
                    kLaunchFlowBit | *id);
}

void PerfettoWriter::add_interned_annotation(uint64_t name, uint64_t value_iid) {
  nested_.clear();
  pb::put_varint(nested_, pf::debug_annotation::kNameIid, name);
  pb::put_varint(nested_, pf::debug_annotation::kStringValueIid, value_iid);
  pb::put_bytes(event_, pf::track_event::kDebugAnnotations, nested_);
}

void PerfettoWriter::write_begin(const trace::Trace& t, const trace::Event& e, uint64_t track, bool instant,
                                 const FwdBwdFlows& flows, uint64_t export_id, uint64_t chrome_id) {
  interned_.clear();
  uint64_t iid = name_iid(t, e);
  event_.clear();
  pb::put_varint(event_, pf::track_event::kType,
                 instant ? pf::track_event::kTypeInstant : pf::track_event::kTypeSliceBegin);
  pb::put_varint(event_, pf::track_event::kTrackUuid, track);
  pb::put_varint(event_, pf::track_event::kNameIid, iid);
  pb::put_varint(event_, pf::track_event::kCategoryIids, category_iid(chrome_category(e, cuda_info(t, e))));
  // An evaluate_function op carries its backward function's numbers, as in torch's export.
  const auto* inherited = flows.inherited(export_id);
  const auto [seq_nr, fwd_thread_id] = inherited ? *inherited : std::pair(e.seq_nr, e.fwd_thread_id);
  if (seq_nr >= 0) {
    add_annotation(kSequenceNumber, seq_nr);
    add_annotation(kFwdThreadId, int64_t(fwd_thread_id));
  }
  for (const FlowEnd& end : flows.ends(export_id))
    pb::put_fixed64(event_, end.start ? pf::track_event::kFlowIds : pf::track_event::kTerminatingFlowIds,
                    flows_before_ + end.id);
  if (e.shapes != 0 && e.shapes < t.strings.size()) add_interned_annotation(kInputDims, shapes_iid(t, e.shapes));
  if (e.flags & trace::kTruncated) add_annotation(kTruncated, 1);
  add_cuda_facts(t, e, chrome_id);
  // A CUDA call stays at its own times, not CUPTI's as the Chrome export
  // shows a folded one (trace::CudaInfo::cupti_start_ns): those may lie
  // outside the op that made it, and slices on a track must nest.
  start_event_packet(e.start_ns + offset_ns_);
  pb::put_bytes(packet_, pf::packet::kTrackEvent, event_);
  if (!interned_.empty()) pb::put_bytes(packet_, pf::packet::kInternedData, interned_);
  emit_packet();
}

void PerfettoWriter::write_end(int64_t ts, uint64_t track) {
  event_.clear();
  pb::put_varint(event_, pf::track_event::kType, pf::track_event::kTypeSliceEnd);
  pb::put_varint(event_, pf::track_event::kTrackUuid, track);
  start_event_packet(ts + offset_ns_);
  pb::put_bytes(packet_, pf::packet::kTrackEvent, event_);
  emit_packet();
}

uint64_t PerfettoWriter::write_file(const trace::Trace& t) {
  offset_ns_ = t.header.realtime_offset_ns;
  file_.names.assign(t.strings.size(), 0);
  file_.shapes.assign(t.strings.size(), 0);
  file_.thread_tracks.assign(t.threads.size(), 0);
  // Per thread, by start and longer first: the order in which slices open.
  // Plain keys sort much faster than comparisons reaching into the events.
  struct Key {
    uint32_t thread;
    uint32_t index;
    int64_t start;
    int64_t end;
    bool operator<(const Key& o) const {
      if (thread != o.thread) return thread < o.thread;
      if (start != o.start) return start < o.start;
      if (end != o.end) return end > o.end;
      return index < o.index;
    }
  };
  StepSpans steps;  // as in the Chrome export: steps enclose their ops
  for (const trace::Event& e : t.events) steps.add_step(0, e);
  steps.sort();
  for (const trace::Event& e : t.events) steps.cover(0, e);
  std::vector<Key> order;
  order.reserve(t.events.size());
  std::vector<uint64_t> chrome_ids(t.events.size(), 0);  // as the Chrome export numbers them
  for (uint32_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (wire::is_cuda_note(t, e)) continue;  // the report's line, not an event of the program
    chrome_ids[i] = ++ids_before_;
    int64_t end = e.kind == trace::EventKind::Step ? steps.end_of(0, e) : e.end_ns;
    order.push_back({e.thread, i, e.start_ns, end});
  }
  std::sort(order.begin(), order.end());
  FwdBwdFlows flows;  // export ids: event index + 1
  for (uint32_t i = 0; i < t.events.size(); ++i)
    flows.see(t, t.events[i], i + 1, t.events[i].start_ns + t.header.realtime_offset_ns);
  flows.link();
  // A slice must end within its parent: a partial overlap is cut there.
  model::NestingStack open(model::PartialOverlap::Clipped);
  uint64_t open_track = UINT64_MAX;
  auto close = [&](uint32_t, int64_t end) { write_end(end, open_track); };
  for (const Key& k : order) {
    const trace::Event& e = t.events[k.index];
    const uint64_t track = thread_track(t, e.thread);
    const bool instant = e.kind == trace::EventKind::Mark || e.kind == trace::EventKind::Memory;
    if (track != open_track) {
      open.close_all(close);
      open_track = track;
    }
    const int64_t end = instant ? e.start_ns : std::max(k.end, e.start_ns);
    open.settle(e.start_ns, end, close);
    write_begin(t, e, track, instant, flows, k.index + 1, chrome_ids[k.index]);
    if (instant) continue;
    if (open.open(k.index, e.start_ns, end) < end) ++overlaps_cut_;
  }
  open.close_all(close);
  flows_before_ += flows.links();
  return t.events.size();
}

}  // namespace

Result<ExportResult> export_perfetto(const std::vector<std::string>& files, const std::string& out) {
  ExportResult result;
  std::vector<std::string> ignored;  // reading the events reports each file's warnings
  PTPROF_ASSIGN_OR_RETURN(const InputSummary inputs, summarize_inputs(files, &ignored));
  // The launch links of all files, numbered as the Chrome export numbers
  // events (CUDA notes aside), before the write: a launch and its work, or
  // an op and its launch, may lie in different files.
  LaunchLinks links;
  uint64_t id = 0;
  for (const std::string& f : files) {
    format::EventChunkSink see = [&](const trace::Trace& meta, const std::vector<trace::Event>& events) {
      for (const trace::Event& e : events)
        if (!wire::is_cuda_note(meta, e)) links.see(meta, e, ++id);
    };
    PTPROF_RETURN_IF_ERROR(format::read_trace_streaming(f, see, nullptr));
  }
  PTPROF_ASSIGN_OR_RETURN(auto file, OutputFile::create(out));
  PerfettoWriter writer(std::move(file), links);
  writer.write_preamble(inputs);
  for (const std::string& f : files) {
    PTPROF_ASSIGN_OR_RETURN(const trace::Trace t, format::read_trace(f, &result.warnings));
    result.events += writer.write_file(t);
  }
  PTPROF_RETURN_IF_ERROR(writer.finish());
  result.files.push_back(out);
  if (writer.overlaps_cut())
    result.warnings.push_back(std::to_string(writer.overlaps_cut()) +
                              " events overlap the end of the event they start in; Perfetto "
                              "slices must nest, so they end with it in " +
                              out);
  return result;
}

}  // namespace ptprof::exporting
