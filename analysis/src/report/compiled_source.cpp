#include "report/compiled_source.hpp"

namespace ptprof::report::detail {

std::optional<std::string> compiled_source_key(std::string_view name) {
  // Only inductor's kernels: a user's range may end in brackets too.
  if (!name.starts_with("cpp_") && !name.starts_with("triton_")) return std::nullopt;
  const size_t open = name.find(" [");
  if (open == std::string_view::npos || !name.ends_with("]")) return std::nullopt;
  const std::string_view kernel = name.substr(0, open);
  if (kernel.find_first_of(" []") != std::string_view::npos) return std::nullopt;
  std::string_view ops = name.substr(open + 2, name.size() - open - 3);
  std::string key;
  while (!ops.empty()) {
    const size_t comma = ops.find(", ");
    std::string_view op = ops.substr(0, comma);
    ops = comma == std::string_view::npos ? std::string_view() : ops.substr(comma + 2);
    if (op.empty() || op.find_first_of(" ,[]") != std::string_view::npos) return std::nullopt;
    if (!key.empty()) key += " + ";
    // inductor writes an op's overload packet as Python prints it,
    // "aten.relu"; torch's rows say "aten::relu".
    const size_t dot = op.find('.');
    if (dot == std::string_view::npos || dot == 0) {
      key += op;
    } else {
      key += op.substr(0, dot);
      key += "::";
      key += op.substr(dot + 1);
    }
  }
  if (key.empty()) return std::nullopt;
  return key;
}

}  // namespace ptprof::report::detail
