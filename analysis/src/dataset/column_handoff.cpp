#include "dataset/column_handoff.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "ptprof/check.hpp"

namespace ptprof::dataset::detail {

namespace {

const char* type_name(ColumnType t) {
  switch (t) {
    case ColumnType::I64:
      return "int64";
    case ColumnType::I32:
      return "int32";
    case ColumnType::I8:
      return "int8";
    case ColumnType::Bool:
      return "bool";
    case ColumnType::Str:
      return "string";
  }
  return "int64";
}

template <class T>
std::vector<T> narrow(const std::vector<int64_t>& v, bool nullable) {
  std::vector<T> out(v.size());
  // A nullable narrow column keeps its null as the type's minimum.
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = nullable && v[i] == kNull ? std::numeric_limits<T>::min() : static_cast<T>(v[i]);
  return out;
}

}  // namespace

Status write_file(const std::string& path, const void* data, size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::error(path + ": " + std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return Status::error(path + ": " + std::strerror(err));
    }
    p += n;
    bytes -= size_t(n);
  }
  if (::close(fd) != 0) return Status::error(path + ": " + std::strerror(errno));
  return {};
}

Table::Table(std::string name, std::vector<ColumnSpec> specs)
    : name_(std::move(name)), specs_(std::move(specs)), columns_(specs_.size()) {}

void Table::row(std::initializer_list<int64_t> values) {
  if (values.size() != specs_.size()) std::abort();  // a table written wrong: never data in the wrong column
  size_t i = 0;
  for (int64_t v : values) columns_[i++].push_back(v);
  ++rows_;
}

Status Table::write(const std::string& dir, std::string* manifest_entry) const {
  std::string entry = "{\"name\": \"" + name_ + "\", \"rows\": " + std::to_string(rows_) + ", \"columns\": [";
  for (size_t c = 0; c < specs_.size(); ++c) {
    const ColumnSpec& s = specs_[c];
    const std::string path = dir + "/" + name_ + "." + s.name;
    Status st;
    switch (s.type) {
      case ColumnType::I64:
        st = write_file(path, columns_[c].data(), columns_[c].size() * 8);
        break;
      case ColumnType::I32:
      case ColumnType::Str: {
        const auto v = narrow<int32_t>(columns_[c], s.nullable);
        st = write_file(path, v.data(), v.size() * 4);
        break;
      }
      case ColumnType::I8:
      case ColumnType::Bool: {
        const auto v = narrow<int8_t>(columns_[c], s.nullable);
        st = write_file(path, v.data(), v.size());
        break;
      }
    }
    if (!st) return st;
    entry += std::string(c ? ", " : "") + "[\"" + s.name + "\", \"" + type_name(s.type) + "\", " +
             (s.nullable ? "true" : "false") + "]";
  }
  *manifest_entry = entry + "]}";
  return {};
}

Strings::Strings(const std::vector<std::string>& trace_strings) {
  for (const std::string& s : trace_strings) {
    data_ += s;
    offsets_.push_back(int64_t(data_.size()));
  }
}

int64_t Strings::add(std::string_view s) {
  auto [it, added] = added_.try_emplace(std::string(s), int64_t(size()));
  if (added) {
    data_ += s;
    offsets_.push_back(int64_t(data_.size()));
  }
  return it->second;
}

Status Strings::write(const std::string& dir) const {
  if (Status st = write_file(dir + "/strings.offsets", offsets_.data(), offsets_.size() * 8); !st) return st;
  return write_file(dir + "/strings.data", data_.data(), data_.size());
}

}  // namespace ptprof::dataset::detail
