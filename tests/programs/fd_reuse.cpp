// A program that closes every descriptor above stderr, as daemons and some
// launchers do, then opens files of its own (which get the numbers the
// agent's descriptors had), and goes on: new threads record marks (the agent
// registers them and reserves their rings), one of them under thousands of
// new names (the string arena grows), and a forked child records a mark and
// writes a line to each file. Each file must then hold exactly what the
// program wrote: prints "files intact" and exits 0, or names the file that
// is not and exits 1.
//   fd_reuse <directory>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ptprof.h"

namespace {

constexpr int kFiles = 8;
constexpr int kThreads = 4;
constexpr int kMarksPerThread = 100;
constexpr int kNewNames = 5000;  // ~350 KiB of names: more than one step of the arena's reservation
constexpr char kFirst[] = "written by the program first\n";
constexpr char kChild[] = "written by the forked child\n";

void close_all_descriptors() {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
#endif
  for (int fd = 3; fd < 65536; ++fd) ::close(fd);
}

bool write_all(int fd, const char* s) { return ::write(fd, s, std::strlen(s)) == ssize_t(std::strlen(s)); }

void record_from_threads() {
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < kMarksPerThread; ++i) ptprof_mark("fd-reuse.thread");
      if (t != 0) return;
      char name[96];
      for (int i = 0; i < kNewNames; ++i) {
        std::snprintf(name, sizeof name, "fd-reuse.name-%05d-padding-padding-padding-padding", i);
        ptprof_mark(name);
        if (i % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // let the launcher drain
      }
    });
  for (auto& t : threads) t.join();
}

bool fork_child(const std::vector<int>& fds) {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    ptprof_mark("fd-reuse.child");
    bool ok = true;
    for (int fd : fds) ok = write_all(fd, kChild) && ok;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string contents(const std::string& path) {
  std::string out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return "<cannot open>";
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  ptprof_mark("fd-reuse.before");
  close_all_descriptors();
  std::vector<int> fds;
  std::vector<std::string> paths;
  for (int i = 0; i < kFiles; ++i) {
    paths.push_back(std::string(argv[1]) + "/file" + std::to_string(i));
    const int fd = ::open(paths.back().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || !write_all(fd, kFirst)) return 2;
    fds.push_back(fd);
  }
  record_from_threads();
  if (!fork_child(fds)) std::printf("the child failed to write its files\n");
  record_from_threads();
  ptprof_mark("fd-reuse.after");
  int bad = 0;
  for (int i = 0; i < kFiles; ++i) {
    const std::string got = contents(paths[i]);
    if (got != std::string(kFirst) + kChild) {
      std::printf("file%d (descriptor %d) holds %zu bytes, not what the program wrote\n", i, fds[i], got.size());
      ++bad;
    }
  }
  if (bad == 0) std::printf("files intact\n");
  std::fflush(stdout);
  return bad == 0 ? 0 : 1;
}
