// What the tests that run the real `ptprof` binary share: a shell runner, a
// temporary directory and a reader of every trace in a directory.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ptprof/analysis/trace_file.hpp"

namespace ptprof::testing {

namespace fs = std::filesystem;

struct ShellRun {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line; returns its exit status (128+N on signal N) and output.
inline ShellRun sh(const std::string& cmd) {
  ShellRun r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ptprof-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline std::vector<trace::Trace> read_all(const fs::path& dir) {
  auto files = format::expand_trace_paths({dir.string()});
  INFO(files.error());
  REQUIRE(files.ok());
  std::vector<trace::Trace> out;
  for (auto& f : *files) {
    std::vector<std::string> warnings;
    auto t = format::read_trace(f, &warnings);
    INFO(f << ": " << t.error());
    REQUIRE(t);
    CHECK(warnings.empty());
    out.push_back(std::move(*t));
  }
  return out;
}

inline const std::string kPtprof = PTPROF_BIN;
inline const std::string kPrograms = PTPROF_TEST_PROGRAMS_DIR;

}  // namespace ptprof::testing
