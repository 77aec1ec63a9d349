// What the HTML page keeps of the events (HtmlEvents, report_html.hpp): one
// track per thread (and GPU lane) with its ops, ranges, steps, CUDA calls and
// GPU activity, the steps' spans for the markers, and the folded stacks of
// the flame graphs. Names, shapes and stacks are interned page-wide so that
// the page's data stays compact.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ptprof/analysis/flamegraph.hpp"
#include "ptprof/analysis/report_html.hpp"
#include "stacks/native_frames.hpp"

namespace ptprof::html {

namespace detail {

struct PageEvent {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t name = 0;    // index into HtmlEvents::Impl::strings
  uint32_t shapes = 0;  // index into strings; 0 = none
  uint32_t stack = 0;   // index into strings (the stack's text, a line per frame); 0 = none
  uint64_t link = 0;    // ops: their external id; GPU activity: its launching op's; 0 = none
};

struct PageTrack {
  int32_t pid = 0;
  int32_t tid = 0;
  int32_t device = -1;  // >= 0: a GPU lane of that device (tid: the stream)
  std::string thread_name;
  std::vector<PageEvent> events;  // any order until rendered
};

struct PageStep {
  int32_t pid = 0;
  uint64_t number = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

}  // namespace detail

struct HtmlEvents::Impl {
  Impl();

  std::vector<std::string> strings{std::string()};
  std::unordered_map<std::string, uint32_t> ids;
  std::map<std::tuple<int32_t, int32_t, int32_t>, detail::PageTrack> tracks;  // (pid, device, tid)
  std::map<int32_t, int32_t> ranks;                                           // pid -> rank, for processes with one
  std::vector<detail::PageStep> steps;
  uint64_t events = 0;                                   // every event kept or not
  mutable stacks::flamegraph::Builder cpu, cuda, bytes;  // finished once, by flame_section()
  stacks::NativeFrames native;                           // an op's native stack, less the recording's frames

  uint32_t intern(std::string_view s);
  void add(const trace::Trace& t);
};

namespace detail {

// The timeline's section: its canvas, its data (at most `max_events` of the
// events, the longest first; the page says how many it left out) and its script.
std::string timeline_section(const HtmlEvents::Impl& events, size_t max_events);
// The flame graphs' section ("" when no op carried a stack).
std::string flame_section(const HtmlEvents::Impl& events);
// `"rank R"` for a pid with a rank, else `"pid P"`.
std::string process_label(const std::map<int32_t, int32_t>& ranks, int32_t pid);

// A JSON string literal that may sit inside a <script> element.
void append_script_json_string(std::string& out, std::string_view s);

// The scripts, written once (page_scripts.cpp).
extern const char* const kTimelineScript;
extern const char* const kFlameScript;
extern const char* const kMemoryHoverScript;

}  // namespace detail
}  // namespace ptprof::html
