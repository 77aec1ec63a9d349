// --group-by-compiled-source (issue #25 item 3; docs/report.md, "Inductor
// kernels"): the row an inductor kernel's time folds onto.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ptprof::report::detail {

// ptprof's Python bootstrap names the range of a C++ kernel inductor
// generated `<kernel> [<aten ops>]`, the ops as inductor's output code lists
// them ("Original ATen: [aten.sum, aten.threshold_backward]"). The key those
// ops fold onto, in torch's operator spelling: "aten::sum +
// aten::threshold_backward" ("aten::relu" for a kernel of one op, the row of
// the eager op). nullopt for any other name: its row stays its own.
std::optional<std::string> compiled_source_key(std::string_view name);

}  // namespace ptprof::report::detail
