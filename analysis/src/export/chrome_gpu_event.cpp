// The args of CUDA events in Kineto's schema (gpu_event_args.hpp lists
// them), as torch.profiler's export_chrome_trace writes them, which HTA reads
// (it counts an event as GPU work only with a stream, as a kernel only with a
// correlation), and the "ac2g" flow from a launch to its work.
#include <charconv>
#include <type_traits>

#include "export/chrome_event_format.hpp"
#include "text/json_string.hpp"

namespace ptprof::exporting::detail {

void append_json_args(std::string& out, const std::vector<EventArg>& args) {
  for (const EventArg& a : args)
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, FloatArg>) {
            out += ",\"";
            out += a.name;
            out += "\":";
            append_float(out, v.value);
          } else if constexpr (std::is_same_v<V, std::string_view>) {
            out += ",\"";
            out += a.name;
            out += "\":";
            text::append_json_string(out, v);
          } else if constexpr (std::is_same_v<V, Dim3Arg>) {
            out += ",\"";
            out += a.name;
            out += "\":[";
            for (size_t i = 0; i < v.size(); ++i) {
              if (i) out += ',';
              char buf[16];
              auto r = std::to_chars(buf, buf + sizeof buf, v[i]);
              out.append(buf, r.ptr);
            }
            out += ']';
          } else {
            append_number_arg(out, a.name, v);
          }
        },
        a.value);
}

void ChromeEventFormatter::append_cuda_args(std::string& out, const trace::Trace& t, const trace::Event& e) {
  gpu_args_.list(t, e, realtime_offset_ns_, args_);
  append_json_args(out, args_);
}

void ChromeEventFormatter::append_launch_flow(std::string& out, const trace::Trace& t, const trace::Event& e,
                                              uint64_t export_id) {
  if (!links_) return;
  const std::optional<uint64_t> id = links_->flow(t, e, export_id);
  if (!id) return;
  // Kineto binds the end to the enclosing slice ("bp":"e"), the work itself.
  out += ",\n";
  append_flow(out, t, e, is_cuda_call(e.kind), *id, "ac2g");
}

}  // namespace ptprof::exporting::detail
