#pragma once
#include <vector>

#include "ptprof/analysis/report.hpp"

namespace ptprof::report {

// Sorts descending by `key`, keeping ties in their current order.
void sort_rows(std::vector<Row>& rows, SortKey key);

}  // namespace ptprof::report
