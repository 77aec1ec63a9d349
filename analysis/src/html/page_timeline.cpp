// The page's timeline and flame graphs: their data as compact JSON (names,
// shapes and stacks as indices into one string table, times as deltas) and
// the elements the scripts draw into (page_scripts.cpp).
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <string_view>

#include "html/page_events.hpp"
#include "html/report_html_plots.hpp"
#include "model/event_tree.hpp"
#include "ptprof/analysis/report_format.hpp"
#include "text/text_util.hpp"

namespace ptprof::html::detail {

using report::format_time_us;

namespace {

// Lines of each flame graph: the heaviest stacks; the rest are summed into
// the page's note.
constexpr size_t kMaxFoldedLines = 20000;

void append_numbers(std::string& out, std::string_view key, const std::vector<int64_t>& values) {
  out += ",\"";
  out += key;
  out += "\":[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  out += ']';
}

bool any_nonzero(const std::vector<int64_t>& v) {
  return std::any_of(v.begin(), v.end(), [](int64_t x) { return x != 0; });
}

std::string track_label(const HtmlEvents::Impl& ev, const PageTrack& t) {
  std::string label = process_label(ev.ranks, t.pid);
  if (ev.ranks.count(t.pid)) label += " (pid " + std::to_string(t.pid) + ")";
  if (t.device >= 0) return label + " · GPU " + std::to_string(t.device) + " stream " + std::to_string(t.tid);
  return label + " · " + (t.thread_name.empty() ? "thread" : t.thread_name) + " (tid " + std::to_string(t.tid) + ")";
}

// The shortest duration kept when at most `max_events` are: events longer
// than it are kept, and as many of the events that last exactly that long as
// fit. -1 when every event fits.
int64_t shortest_kept(const HtmlEvents::Impl& ev, size_t max_events, size_t* total) {
  std::vector<int64_t> durations;
  for (const auto& [key, track] : ev.tracks)
    for (const PageEvent& e : track.events) durations.push_back(e.end_ns - e.start_ns);
  *total = durations.size();
  if (durations.size() <= max_events || max_events == 0) return -1;
  std::nth_element(durations.begin(), durations.begin() + ptrdiff_t(max_events - 1), durations.end(), std::greater<>());
  return durations[max_events - 1];
}

}  // namespace

std::string timeline_section(const HtmlEvents::Impl& ev, size_t max_events) {
  size_t total = 0;
  const int64_t shortest = shortest_kept(ev, max_events, &total);
  size_t at_shortest_left = 0;  // events lasting exactly `shortest` that still fit
  if (shortest >= 0) {
    size_t longer = 0;
    for (const auto& [key, track] : ev.tracks)
      for (const PageEvent& e : track.events) longer += (e.end_ns - e.start_ns) > shortest;
    at_shortest_left = max_events - std::min(max_events, longer);
  }
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const auto& [key, track] : ev.tracks)
    for (const PageEvent& e : track.events) {
      t0 = std::min(t0, e.start_ns);
      t1 = std::max(t1, e.end_ns);
    }
  if (t0 == INT64_MAX) return "<p>No events to draw.</p>";

  std::string data = "{\"t1\":" + std::to_string(t1 - t0) + ",\"tracks\":[";
  size_t kept = 0;
  bool first_track = true;
  for (const auto& [key, track] : ev.tracks) {
    std::vector<PageEvent> events;
    for (const PageEvent& e : track.events) {
      const int64_t d = e.end_ns - e.start_ns;
      if (shortest < 0 || d > shortest || (d == shortest && at_shortest_left && at_shortest_left--))
        events.push_back(e);
    }
    if (events.empty()) continue;
    kept += events.size();
    // Nesting order: by start, the longer first; depths as Perfetto nests slices.
    std::stable_sort(events.begin(), events.end(), [](const PageEvent& a, const PageEvent& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::vector<int64_t> start, dur, name, depth, shapes, stack, link;
    model::NestingStack open(model::PartialOverlap::Clipped);
    int64_t level = 0, previous = t0;
    for (uint32_t i = 0; i < events.size(); ++i) {
      const PageEvent& e = events[i];
      open.settle(e.start_ns, e.end_ns, [&](uint32_t, int64_t) { --level; });
      open.open(i, e.start_ns, e.end_ns);
      depth.push_back(level++);
      start.push_back(e.start_ns - previous);
      previous = e.start_ns;
      dur.push_back(e.end_ns - e.start_ns);
      name.push_back(e.name);
      shapes.push_back(e.shapes);
      stack.push_back(e.stack);
      link.push_back(int64_t(e.link));
    }
    data += first_track ? "{" : ",{";
    first_track = false;
    data += "\"label\":";
    append_script_json_string(data, track_label(ev, track));
    data += ",\"pid\":" + std::to_string(track.pid) + ",\"gpu\":" + (track.device >= 0 ? "1" : "0");
    append_numbers(data, "s", start);
    append_numbers(data, "d", dur);
    append_numbers(data, "n", name);
    append_numbers(data, "l", depth);
    if (any_nonzero(shapes)) append_numbers(data, "h", shapes);
    if (any_nonzero(stack)) append_numbers(data, "k", stack);
    if (any_nonzero(link)) append_numbers(data, "x", link);
    data += '}';
  }
  data += "],\"steps\":[";
  std::vector<PageStep> steps = ev.steps;
  std::sort(steps.begin(), steps.end(), [](const PageStep& a, const PageStep& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.pid < b.pid;
  });
  // Each process's steps on a lane of the ruler of their own (ranks step at
  // the same time: on one lane their bars and labels would overlap), in
  // order of rank, then pid.
  std::set<std::pair<int64_t, int32_t>> lane_order;  // rank (none: last), pid
  for (const PageStep& s : steps) {
    auto rank = ev.ranks.find(s.pid);
    lane_order.emplace(rank == ev.ranks.end() ? INT64_MAX : rank->second, s.pid);
  }
  std::map<int32_t, size_t> lane_of;
  for (const auto& [rank, pid] : lane_order) lane_of.emplace(pid, lane_of.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string label = "step " + std::to_string(steps[i].number);
    if (lane_of.size() > 1) label.insert(0, process_label(ev.ranks, steps[i].pid) + " ");
    data += (i ? ",[" : "[") + std::to_string(steps[i].start_ns - t0) + "," +
            std::to_string(steps[i].end_ns - steps[i].start_ns) + ",";
    append_script_json_string(data, label);
    data += "," + std::to_string(lane_of[steps[i].pid]) + "]";
  }
  data += "],\"strings\":[";
  for (size_t i = 0; i < ev.strings.size(); ++i) {
    if (i) data += ',';
    append_script_json_string(data, ev.strings[i]);
  }
  data += "]}";

  std::string out =
      "<p>Every process and thread, its ops nested as they ran (as Perfetto nests them), steps marked above. "
      "It opens on the steps. Wheel: zoom at the pointer; drag: pan; double-click: back to the steps; click an op: "
      "its details. "
      "Where many events fall in one pixel they are drawn as one grey block: zoom in to see them apart.</p>\n";
  if (kept < total)
    out += "<p class=\"tl-note\" id=\"timeline-sampled\">The timeline holds " + std::to_string(kept) + " of the " +
           std::to_string(total) + " events: the longest; the " + std::to_string(total - kept) + " shorter than " +
           format_time_us(double(shortest) / 1000.0) +
           " are left out here (the tables count them all; <code>ptprof export</code> has every event).</p>\n";
  out +=
      "<div id=\"timeline-tools\"><button id=\"tl-in\">zoom in</button> <button id=\"tl-out\">zoom out</button> "
      "<button id=\"tl-steps\">the steps</button> <button id=\"tl-reset\">whole window</button> "
      "<span id=\"tl-range\"></span></div>\n"
      "<div id=\"timeline-box\"><canvas id=\"timeline\" data-events=\"" +
      std::to_string(kept) +
      "\"></canvas><div id=\"timeline-space\"></div></div>\n<div id=\"tl-details\">Click an op for its "
      "details.</div>\n";
  out += "<script type=\"application/json\" id=\"tl-data\">" + data + "</script>\n";
  return out;
}

std::string flame_section(const HtmlEvents::Impl& ev) {
  // Without stacks every line would be an op's name alone: the table says that better.
  if (ev.cpu.ops_with_stack() == 0 && ev.bytes.ops_with_stack() == 0) return {};
  struct Graph {
    const char* key;
    const char* title;
    std::string folded;
  };
  Graph graphs[] = {{"cpu", "CPU time (self)", std::move(ev.cpu).finish()},
                    {"cuda", "CUDA time (kernels, copies and sets each op launched)", std::move(ev.cuda).finish()},
                    {"bytes", "Allocated bytes", std::move(ev.bytes).finish()}};
  std::string data = "{";
  bool any = false;
  for (Graph& g : graphs) {
    std::vector<std::pair<int64_t, std::string_view>> lines;
    std::string_view rest = g.folded;
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      const size_t space = line.rfind(' ');
      if (space == std::string_view::npos) continue;
      lines.emplace_back(std::atoll(std::string(line.substr(space + 1)).c_str()), line.substr(0, space));
    }
    if (lines.empty()) continue;
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const int64_t left_out =
        std::accumulate(lines.begin() + ptrdiff_t(std::min(lines.size(), kMaxFoldedLines)), lines.end(), int64_t(0),
                        [](int64_t s, const auto& l) { return s + l.first; });
    lines.resize(std::min(lines.size(), kMaxFoldedLines));
    data += any ? ",\"" : "\"";
    any = true;
    data += std::string(g.key) + "\":{\"title\":\"" + g.title + "\",\"left_out\":" + std::to_string(left_out) +
            ",\"lines\":[";
    for (size_t i = 0; i < lines.size(); ++i) {
      data += i ? ",[" : "[";
      append_script_json_string(data, lines[i].second);
      data += ',';
      data += std::to_string(lines[i].first);
      data += ']';
    }
    data += "]}";
  }
  if (!any) return {};
  return "<p>The ops' call stacks (recorded with <code>--with-stack</code>), outermost at the top, each frame as wide "
         "as the time or bytes under it. Click a frame to zoom to it, the top bar to zoom out; hover for values. "
         "<code>ptprof flamegraph</code> writes the same stacks folded.</p>\n"
         "<div id=\"flame-tools\"></div><canvas id=\"flame\"></canvas><div id=\"flame-info\">&nbsp;</div>\n"
         "<script type=\"application/json\" id=\"flame-data\">" +
         data + "}</script>\n";
}

}  // namespace ptprof::html::detail
