// The hand-off's tables: rows of int64 values kept per column, written as
// raw little-endian arrays of the column's width, which pyarrow maps as they
// are (Array.from_buffers). A string column holds ids into the hand-off's
// string table (one per trace file: its own strings, then what the tables
// add); a nullable column's null is kNull.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptprof/status.hpp"

namespace ptprof::dataset::detail {

inline constexpr int64_t kNull = INT64_MIN;

enum class ColumnType : uint8_t { I64, I32, I8, Bool, Str };

struct ColumnSpec {
  const char* name;
  ColumnType type;
  bool nullable = false;
};

class Table {
 public:
  Table(std::string name, std::vector<ColumnSpec> specs);
  // One value per column, in the specs' order.
  void row(std::initializer_list<int64_t> values);
  const std::string& name() const { return name_; }
  size_t rows() const { return rows_; }
  // DIR/<table>.<column>, and the table's entry in the manifest.
  Status write(const std::string& dir, std::string* manifest_entry) const;

 private:
  std::string name_;
  std::vector<ColumnSpec> specs_;
  std::vector<std::vector<int64_t>> columns_;
  size_t rows_ = 0;
};

// The hand-off's strings: the trace's, by their ids, then any added.
class Strings {
 public:
  explicit Strings(const std::vector<std::string>& trace_strings);
  int64_t add(std::string_view s);
  // DIR/strings.offsets (int64, count + 1) and DIR/strings.data (UTF-8 as recorded).
  Status write(const std::string& dir) const;
  size_t size() const { return offsets_.size() - 1; }

 private:
  std::string data_;
  std::vector<int64_t> offsets_{0};
  std::unordered_map<std::string, int64_t> added_;
};

Status write_file(const std::string& path, const void* data, size_t bytes);

}  // namespace ptprof::dataset::detail
