#include "ptprof/analysis/report_cuda_api.hpp"

#include <algorithm>
#include <cmath>

#include "text/text_util.hpp"

namespace ptprof::report {

void CudaApiSummary::add(const trace::Trace& t) {
  using trace::EventKind;
  for (const trace::Event& e : t.events) {
    if ((e.kind != EventKind::CudaApi && e.kind != EventKind::CuptiApi) || e.name >= t.strings.size()) continue;
    durations_[t.strings[e.name]].push_back(std::max<int64_t>(0, e.end_ns - e.start_ns));
  }
}

std::vector<CudaApiRow> CudaApiSummary::rows() const {
  std::vector<CudaApiRow> rows;
  int64_t all = 0;
  for (const auto& [name, d] : durations_) {
    std::vector<int64_t> v = d;
    std::sort(v.begin(), v.end());
    CudaApiRow r;
    r.name = name;
    r.calls = v.size();
    for (int64_t x : v) r.total_ns += x;
    r.avg_ns = double(r.total_ns) / double(v.size());
    const size_t mid = v.size() / 2;
    r.median_ns = v.size() % 2 ? double(v[mid]) : (double(v[mid - 1]) + double(v[mid])) / 2.0;
    r.min_ns = v.front();
    r.max_ns = v.back();
    if (v.size() > 1) {
      double sq = 0;
      for (int64_t x : v) sq += (double(x) - r.avg_ns) * (double(x) - r.avg_ns);
      r.stddev_ns = std::sqrt(sq / double(v.size() - 1));
    }
    all += r.total_ns;
    rows.push_back(std::move(r));
  }
  for (CudaApiRow& r : rows) r.time_percent = all ? 100.0 * double(r.total_ns) / double(all) : 0.0;
  std::sort(rows.begin(), rows.end(), [](const CudaApiRow& a, const CudaApiRow& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return rows;
}

namespace {

// nsys's number style: thousands separated by commas.
std::string grouped(double v, int decimals) {
  std::string s = text::fixed(std::fabs(v), decimals);
  size_t dot = s.find('.');
  size_t int_end = dot == std::string::npos ? s.size() : dot;
  std::string out;
  for (size_t i = 0; i < int_end; ++i) {
    if (i && (int_end - i) % 3 == 0) out += ',';
    out += s[i];
  }
  out += s.substr(int_end);
  return v < 0 ? "-" + out : out;
}

const char* const kTitles[] = {"Time (%)", "Total Time (ns)", "Num Calls",   "Avg (ns)", "Med (ns)",
                               "Min (ns)", "Max (ns)",        "StdDev (ns)", "Name"};

}  // namespace

std::string render_cuda_api_table(const std::vector<CudaApiRow>& rows) {
  if (rows.empty()) return {};
  std::vector<std::vector<std::string>> cells;
  cells.emplace_back(std::begin(kTitles), std::end(kTitles));
  for (const CudaApiRow& r : rows)
    cells.push_back({text::fixed(r.time_percent, 1), grouped(double(r.total_ns), 0), grouped(double(r.calls), 0),
                     grouped(r.avg_ns, 1), grouped(r.median_ns, 1), grouped(double(r.min_ns), 0),
                     grouped(double(r.max_ns), 0), grouped(r.stddev_ns, 1), r.name});
  std::vector<size_t> widths(std::size(kTitles), 0);
  for (const auto& line : cells)
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], text::utf8_length(line[c]));
  auto render = [&](const std::vector<std::string>& line) {
    std::string s;
    for (size_t c = 0; c < line.size(); ++c) {
      s += ' ';
      if (c + 1 == line.size()) {
        s += line[c];  // the name, left-aligned and last, as nsys prints it
      } else {
        text::append_right(s, line[c], widths[c]);
        s += ' ';
      }
    }
    return s + "\n";
  };
  std::string out = "\nCUDA API summary (cuda_api_sum):\n\n" + render(cells[0]);
  std::string rule;
  for (size_t c = 0; c < widths.size(); ++c)
    rule += " " + std::string(widths[c], '-') + (c + 1 < widths.size() ? " " : "");
  out += rule + "\n";
  for (size_t i = 1; i < cells.size(); ++i) out += render(cells[i]);
  return out;
}

std::string render_cuda_api_csv(const std::vector<CudaApiRow>& rows) {
  if (rows.empty()) return {};
  std::string out;
  for (size_t c = 0; c < std::size(kTitles); ++c) out += (c ? "," : "") + text::csv_field(kTitles[c]);
  out += "\n";
  for (const CudaApiRow& r : rows)
    out += text::fixed(r.time_percent, 1) + "," + std::to_string(r.total_ns) + "," + std::to_string(r.calls) + "," +
           text::fixed(r.avg_ns, 1) + "," + text::fixed(r.median_ns, 1) + "," + std::to_string(r.min_ns) + "," +
           std::to_string(r.max_ns) + "," + text::fixed(r.stddev_ns, 1) + "," + text::csv_field(r.name) + "\n";
  return out;
}

std::string render_cuda_api_json(const std::vector<CudaApiRow>& rows) {
  if (rows.empty()) return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const CudaApiRow& r = rows[i];
    out += "    {\"name\": " + text::json_string(r.name) + ", \"time_percent\": " + text::fixed(r.time_percent, 2) +
           ", \"total_ns\": " + std::to_string(r.total_ns) + ", \"calls\": " + std::to_string(r.calls) +
           ", \"avg_ns\": " + text::fixed(r.avg_ns, 1) + ", \"med_ns\": " + text::fixed(r.median_ns, 1) +
           ", \"min_ns\": " + std::to_string(r.min_ns) + ", \"max_ns\": " + std::to_string(r.max_ns) +
           ", \"stddev_ns\": " + text::fixed(r.stddev_ns, 1) + "}" + (i + 1 < rows.size() ? ",\n" : "\n");
  }
  return out + "  ]";
}

}  // namespace ptprof::report
