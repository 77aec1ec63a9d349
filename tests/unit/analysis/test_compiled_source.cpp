// --group-by-compiled-source's key (issue #25 item 3): the row an inductor
// kernel's range folds onto, from the aten ops the bootstrap put in its name.
#include <catch2/catch.hpp>

#include "report/compiled_source.hpp"

using ptprof::report::detail::compiled_source_key;

TEST_CASE("compiled source: a kernel of one op folds onto the eager op's row", "[report][compiled]") {
  CHECK(compiled_source_key("cpp_fused_relu_0 [aten.relu]") == std::optional<std::string>("aten::relu"));
}

TEST_CASE("compiled source: a fused kernel folds onto its ops, in inductor's order", "[report][compiled]") {
  CHECK(compiled_source_key("cpp_fused_sum_threshold_backward_0 [aten.sum, aten.threshold_backward]") ==
        std::optional<std::string>("aten::sum + aten::threshold_backward"));
  CHECK(compiled_source_key("triton_poi_fused_add_mul_1 [aten.mul, aten.add]") ==
        std::optional<std::string>("aten::mul + aten::add"));
  // A higher-order operator has no namespace dot: kept as inductor names it.
  CHECK(compiled_source_key("cpp_fused_x_2 [wrap_with_autocast, aten.add]") ==
        std::optional<std::string>("wrap_with_autocast + aten::add"));
}

TEST_CASE("compiled source: other names keep their rows", "[report][compiled]") {
  CHECK_FALSE(compiled_source_key("cpp_fused_relu_0"));             // no provenance
  CHECK_FALSE(compiled_source_key("aten::addmm"));                  // an operator
  CHECK_FALSE(compiled_source_key("my range [aten.relu]"));         // a user's range
  CHECK_FALSE(compiled_source_key("cpp_fused_relu_0 [aten.relu"));  // unclosed
  CHECK_FALSE(compiled_source_key("cpp_fused_relu_0 []"));          // no ops
  CHECK_FALSE(compiled_source_key("cpp_fused_relu_0 [aten.relu,, aten.add]"));
  CHECK_FALSE(compiled_source_key("## Call CompiledFxGraph fabc ##"));
}
