// torch's _build_table layout, then ptprof's per-step table and drop warnings.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "ptprof/analysis/report_format.hpp"
#include "ptprof/losses.hpp"
#include "report/report_columns.hpp"
#include "text/terminal_text.hpp"
#include "text/text_util.hpp"

namespace ptprof::report {

using namespace detail;
using text::append_right;
using text::utf8_length;
using text::utf8_prefix;

namespace {

constexpr size_t kSpacing = 2;
constexpr size_t kDefaultWidth = 12;
constexpr size_t kMaxNameWidth = 55;
constexpr size_t kMaxShapesWidth = 80;
constexpr size_t kMaxSourceWidth = 75;  // torch's table(max_src_column_width=75)

// torch's trim_path: the end of a long entry, marked with "...".
std::string trim_path(const std::string& path, size_t width) {
  if (path.size() <= width) return path;
  std::string s = path.substr(path.size() - width);
  if (s.size() > 3) s = "..." + s.substr(3);
  return s;
}

std::string cell(const Value& v) { return format_value(v); }

// A torch-style grid: every column right-aligned and followed by two spaces,
// separators of dashes under the same widths.
class Grid {
 public:
  // left_last: the last column is left-aligned (torch's Source Location).
  explicit Grid(std::vector<size_t> widths, bool left_last = false)
      : widths_(std::move(widths)), left_last_(left_last) {}
  std::string separator() const {
    std::string s;
    for (size_t w : widths_) s.append(w, '-').append(kSpacing, ' ');
    return s + "\n";
  }
  std::string line(const std::vector<std::string>& cells) const {
    std::string s;
    for (size_t i = 0; i < widths_.size(); ++i) {
      const std::string& c = i < cells.size() ? cells[i] : kEmpty;
      if (left_last_ && i + 1 == widths_.size()) {
        s += c;
        s.append(widths_[i] > utf8_length(c) ? widths_[i] - utf8_length(c) : 0, ' ');
      } else {
        append_right(s, c, widths_[i]);
      }
      s.append(kSpacing, ' ');
    }
    return s + "\n";
  }

 private:
  inline static const std::string kEmpty;
  std::vector<size_t> widths_;
  bool left_last_ = false;
};

// A row's texts as the terminal shows them (terminal_text.hpp): escaped
// before widths are measured, so a newline in a name cannot forge a row.
struct ShownRow {
  std::string name, input_shapes;
  std::vector<std::string> stack;
  explicit ShownRow(const Row& row)
      : name(text::terminal_text(row.name)), input_shapes(text::terminal_text(row.input_shapes)) {
    for (const std::string& e : row.stack) stack.push_back(text::terminal_text(e));
  }
};

std::string operator_table(const Report& r, size_t row_limit) {
  // torch returns "" for an empty list of events.
  if (r.rows.empty()) return {};
  const size_t n = row_limit == 0 ? r.rows.size() : std::min(row_limit, r.rows.size());
  std::vector<ShownRow> shown(r.rows.begin(), r.rows.end());
  const std::vector<Column> cols = columns(r);
  size_t name_width = 0, shapes_width = 0, source_width = 0;
  for (const ShownRow& row : shown) {
    name_width = std::max(name_width, utf8_length(row.name));
    shapes_width = std::max(shapes_width, utf8_length(row.input_shapes));
    for (const std::string& e : row.stack) source_width = std::max(source_width, e.size());
  }
  source_width = std::min(source_width + 4, kMaxSourceWidth);
  name_width = std::min(name_width + 4, kMaxNameWidth);
  shapes_width = std::min(shapes_width + 4, kMaxShapesWidth);

  std::vector<size_t> widths;
  std::vector<std::string> titles;
  for (const Column& c : cols) {
    titles.emplace_back(c.title);
    widths.push_back(c.title == "Input Shapes"      ? shapes_width
                     : c.title == "Source Location" ? source_width
                                                    : kDefaultWidth);
  }
  widths[0] = name_width;
  Grid grid(widths, r.has_stack);

  std::string out = grid.separator() + grid.line(titles) + grid.separator();
  std::vector<std::string> cells(cols.size());
  for (size_t i = 0; i < n; ++i) {
    const ShownRow& row = shown[i];
    for (size_t c = 0; c < cols.size(); ++c) cells[c] = cell(cols[c].get(r.rows[i], r));
    cells[0] = row.name;
    if (utf8_length(row.name) >= kMaxNameWidth - 3)
      cells[0] = std::string(utf8_prefix(row.name, kMaxNameWidth - 3)) + "...";
    if (r.has_input_shapes) {
      const size_t at = cols.size() - (r.has_stack ? 2 : 1);
      cells[at] = std::string(utf8_prefix(row.input_shapes, shapes_width));
    }
    if (!r.has_stack) {
      out += grid.line(cells);
      continue;
    }
    // torch's layout: the innermost entry on the row, the others below it,
    // then an empty line.
    cells.back() = row.stack.empty() ? std::string() : trim_path(row.stack.front(), source_width);
    out += grid.line(cells);
    std::vector<std::string> more(cols.size());
    for (size_t e = 1; e < row.stack.size(); ++e) {
      more.back() = trim_path(row.stack[e], source_width);
      out += grid.line(more);
    }
    out += grid.line(std::vector<std::string>(cols.size()));
  }
  out += grid.separator();
  out += "Self CPU time total: " + format_time_us(double(r.self_cpu_total_ns) / 1000.0) + "\n";
  if (r.has_cuda_time) out += "Self CUDA time total: " + format_time_us(double(r.self_cuda_total_ns) / 1000.0) + "\n";
  return out;
}

std::string step_label(const StepRow& s) {
  switch (s.role) {
    case StepRow::Role::BeforeSteps:
      return std::string(trace::kBeforeStepsName);
    case StepRow::Role::AfterSteps:
      return std::string(trace::kAfterStepsName);
    default:
      return std::to_string(s.step) + (s.partial ? " (partial)" : "");
  }
}

// The steps, with the time before the first and after the last apart:
// above and below them, outside the separators that enclose the steps.
std::string step_table(const Report& r) {
  if (r.steps.empty() && r.outside_steps.empty()) return {};
  std::vector<const StepRow*> all;
  for (const StepRow& s : r.steps) all.push_back(&s);
  for (const StepRow& s : r.outside_steps) all.push_back(&s);
  // PID and TID only matter once steps come from more than one thread.
  bool many = std::any_of(all.begin(), all.end(),
                          [&](const StepRow* s) { return s->pid != all[0]->pid || s->tid != all[0]->tid; });
  std::vector<std::string> titles{"Step"};
  if (many) titles.insert(titles.end(), {"PID", "TID"});
  titles.insert(titles.end(), {"Wall time", "Operators", "Operators %"});
  // torch.compile's share of each step, when the inputs compiled.
  const bool compiled = r.compile.any();
  std::map<std::tuple<uint64_t, int32_t, int32_t>, const StepCompile*> compile_of;
  if (compiled) {
    titles.insert(titles.end(), {"Compile", "Recompiles", "Graph breaks"});
    for (const StepCompile& c : r.compile.steps) compile_of[{c.step, c.pid, c.tid}] = &c;
  }
  std::vector<size_t> widths(titles.size(), kDefaultWidth);
  if (!r.outside_steps.empty()) widths[0] = trace::kAfterStepsName.size() + 2;
  Grid grid(std::move(widths));
  auto line = [&](const StepRow& s) {
    std::vector<std::string> cells{step_label(s)};
    if (many) cells.insert(cells.end(), {std::to_string(s.pid), std::to_string(s.tid)});
    cells.push_back(format_time_us(double(s.wall_ns) / 1000.0));
    cells.push_back(format_time_us(double(s.operator_ns) / 1000.0));
    cells.push_back(format_time_share(double(s.operator_ns), double(s.wall_ns)));
    if (compiled) {
      auto it = s.role == StepRow::Role::Step ? compile_of.find({s.step, s.pid, s.tid}) : compile_of.end();
      const StepCompile* c = it == compile_of.end() ? nullptr : it->second;
      cells.push_back(c ? format_time_us(double(c->ns) / 1000.0) : "-");
      cells.push_back(c ? std::to_string(c->recompiles) : "-");
      cells.push_back(c ? std::to_string(c->graph_breaks) : "-");
    }
    return grid.line(cells);
  };
  std::string out = "\nPer-step times (ProfilerStep#N spans; operators: top-level ops and ranges inside; " +
                    std::to_string(r.steps.size()) + " steps)\n";
  out += grid.separator() + grid.line(titles) + grid.separator();
  bool before = false;
  for (const StepRow& s : r.outside_steps) {
    if (s.role != StepRow::Role::BeforeSteps) continue;
    out += line(s);
    before = true;
  }
  if (before) out += grid.separator();
  if (!r.steps.empty()) {
    for (const StepRow& s : r.steps) out += line(s);
    out += grid.separator();
  }
  for (const StepRow& s : r.outside_steps)
    if (s.role == StepRow::Role::AfterSteps) out += line(s);
  if (std::any_of(r.outside_steps.begin(), r.outside_steps.end(),
                  [](const StepRow& s) { return s.role == StepRow::Role::AfterSteps; }))
    out += grid.separator();
  return out;
}

}  // namespace

std::string drops_warning(const Report& r) {
  std::string out;
  if (!r.drops.empty()) {
    out = "WARNING: " + std::to_string(r.dropped) +
          " events were dropped (a thread's ring was full); the tables undercount:\n";
    for (const ThreadDrops& d : r.drops)
      out += "  " + text::terminal_text(d.path) + ": pid " + std::to_string(d.pid) + " tid " + std::to_string(d.tid) +
             " (" + text::terminal_text(d.thread_name) + "): " + std::to_string(d.dropped) + " dropped\n";
  }
  for (const std::string& line : trace::loss_lines(r.losses)) out += "WARNING: " + line + "\n";
  return out;
}

std::string render_table(const Report& r, size_t row_limit) {
  std::string out = operator_table(r, row_limit) + step_table(r) + render_compile_table(r.compile) +
                    render_cuda_api_table(r.cuda_api) + render_gpu_sections(r.gpu) + render_ranks_table(r.ranks);
  // Traces of a ptprof that measured no cost per event have no line.
  if (r.cost.ops || r.cost.records) out += "\nptprof's own cost: " + cost::describe(r.cost) + "\n";
  std::string drops = drops_warning(r);
  if (!drops.empty()) out += "\n" + drops;
  // The other sections' names (kernels, CUDA calls, ranks' hosts) too: no
  // byte of the program's reaches the terminal as a control.
  return text::terminal_text(out, /*keep_newlines=*/true);
}

}  // namespace ptprof::report
