// Plain and gzip output files behind OutputFile.
#include "ptprof/analysis/output_file.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "format/exclusive_file.hpp"

namespace ptprof::exporting {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

// The file under its temporary name; renamed into place by commit().
class TempFile {
 public:
  Status open(const std::string& path) {
    path_ = path;
    tmp_ = path + ".tmp";
    // Never through a symlink someone planted; a leftover of our own (an
    // export that was killed) is replaced.
    int fd = format::detail::create_exclusive(tmp_);
    struct stat st {};
    if (fd < 0 && errno == EEXIST && ::lstat(tmp_.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == ::geteuid() && st.st_nlink == 1 && ::unlink(tmp_.c_str()) == 0)
      fd = format::detail::create_exclusive(tmp_);
    if (fd < 0)
      return Status::error(tmp_ + ": " +
                           (errno == EEXIST
                                ? std::string("exists and is not a file of ours (a symlink?); not written through")
                                : std::string(std::strerror(errno))));
    f_ = ::fdopen(fd, "wb");
    if (!f_) {
      Status failed = Status::error(tmp_ + ": " + std::strerror(errno));
      ::close(fd);
      ::unlink(tmp_.c_str());
      return failed;
    }
    return {};
  }
  ~TempFile() {
    if (f_) {
      std::fclose(f_);
      std::remove(tmp_.c_str());
    }
  }
  void put(const void* p, size_t n) {
    if (failed_.empty() && std::fwrite(p, 1, n, f_) != n) failed_ = std::strerror(errno);
    written_ += n;
  }
  Status commit() {
    if (std::fflush(f_) != 0 && failed_.empty()) failed_ = std::strerror(errno);
    if (std::fclose(f_) != 0 && failed_.empty()) failed_ = std::strerror(errno);
    f_ = nullptr;
    if (failed_.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0)
      failed_ = std::string("cannot rename into place: ") + std::strerror(errno);
    if (failed_.empty()) return {};
    std::remove(tmp_.c_str());
    return Status::error(path_ + ": " + failed_);
  }
  void fail(std::string what) {
    if (failed_.empty()) failed_ = std::move(what);
  }
  uint64_t written() const { return written_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  std::string failed_;
  uint64_t written_ = 0;
};

class PlainFile final : public OutputFile {
 public:
  Status open(const std::string& path) {
    PTPROF_RETURN_IF_ERROR(file_.open(path));
    buffer_.reserve(kBufferBytes);
    return {};
  }
  void write(std::string_view bytes) override {
    buffer_.append(bytes);
    if (buffer_.size() >= kBufferBytes) flush();
  }
  Status finish() override {
    flush();
    return file_.commit();
  }
  uint64_t bytes_written() const override { return file_.written() + buffer_.size(); }

 private:
  void flush() {
    file_.put(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  TempFile file_;
  std::string buffer_;
};

class GzipFile final : public OutputFile {
 public:
  ~GzipFile() override {
    if (stream_ready_) deflateEnd(&z_);
  }
  Status open(const std::string& path) {
    PTPROF_RETURN_IF_ERROR(file_.open(path));
    // 15 + 16: a gzip wrapper, which gzip, zcat and HTA's gzip.open read.
    // Level 1: exports are large and fast beats small here.
    if (deflateInit2(&z_, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return Status::error(path + ": cannot start gzip compression");
    stream_ready_ = true;
    input_.reserve(kBufferBytes);
    output_.resize(kBufferBytes);
    return {};
  }
  void write(std::string_view bytes) override {
    input_.append(bytes);
    if (input_.size() >= kBufferBytes) deflate_input(Z_NO_FLUSH);
  }
  Status finish() override {
    deflate_input(Z_FINISH);
    return file_.commit();
  }
  uint64_t bytes_written() const override { return file_.written(); }

 private:
  void deflate_input(int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(input_.data());
    z_.avail_in = uInt(input_.size());
    int rc;
    do {
      z_.next_out = reinterpret_cast<Bytef*>(output_.data());
      z_.avail_out = uInt(output_.size());
      rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) {
        file_.fail("gzip compression failed");
        break;
      }
      file_.put(output_.data(), output_.size() - z_.avail_out);
    } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    input_.clear();
  }
  TempFile file_;
  z_stream z_{};
  bool stream_ready_ = false;
  std::string input_;
  std::string output_;
};

template <class File>
Result<std::unique_ptr<OutputFile>> open_file(const std::string& path) {
  auto f = std::make_unique<File>();
  PTPROF_RETURN_IF_ERROR(f->open(path));
  return std::unique_ptr<OutputFile>(std::move(f));
}

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& path) {
  return path.ends_with(".gz") ? open_file<GzipFile>(path) : open_file<PlainFile>(path);
}

Status write_file(const std::string& path, std::string_view contents) {
  PTPROF_ASSIGN_OR_RETURN(auto file, OutputFile::create(path));
  file->write(contents);
  return file->finish();
}

}  // namespace ptprof::exporting
