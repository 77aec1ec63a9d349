#include "bridge/bridge_builder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "process/subprocess.hpp"
#include "ptprof/bridge_kit.hpp"
#include "ptprof/status.hpp"

namespace ptprof::launcher {
namespace {

using Outcome = BridgeBuildResult::Outcome;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool make_dirs(const std::string& path) {
  std::string partial;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start + 1);
    partial = path.substr(0, slash);
    if (!partial.empty() && ::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) break;
    start = slash;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void remove_tree(const std::string& path) {
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = path;
      child += '/';
      child += name;
      struct stat st {};
      if (::lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(child);
      else
        ::unlink(child.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return bool(out);
}

// An exclusive lock on a file of the cache, held for the object's life.
class CacheLock {
 public:
  explicit CacheLock(const std::string& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) {
    if (fd_ >= 0) {
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~CacheLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_;
};

// The compiler command: $CXX (which may carry flags, e.g. "ccache g++"), else
// the first of c++, g++, clang++ on PATH.
Result<std::vector<std::string>> find_compiler() {
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) {
    std::vector<std::string> words;
    std::istringstream in(cxx);
    for (std::string w; in >> w;) words.push_back(w);
    if (!words.empty() && !find_executable(words[0]).empty()) return words;
    return Status::error("no C++ compiler: CXX=" + std::string(cxx) +
                         " is not an executable (set CXX to a C++ compiler, or unset it)");
  }
  for (const char* name : {"c++", "g++", "clang++"})
    if (!find_executable(name).empty()) return std::vector<std::string>{name};
  return Status::error(
      "no C++ compiler: none of c++, g++, clang++ is on PATH (install one, e.g. `apt-get install g++`, or set CXX)");
}

// torch's C++ headers: torch/include beside a pip or conda torch's lib/, or
// <prefix>/include for a system torch in <prefix>/lib/<multiarch> (Debian).
Result<std::string> find_headers(const bridge::TorchInstall& torch) {
  const std::string candidates[] = {torch.lib_dir + "/../include", torch.lib_dir + "/../../include"};
  for (const auto& inc : candidates)
    if (exists(inc + "/ATen/record_function.h") && exists(inc + "/torch/csrc/api/include/torch/version.h")) return inc;
  return Status::error("no C++ headers for torch " + torch.version + " (ATen/record_function.h is in neither " +
                       candidates[0] + " nor " + candidates[1] +
                       "; pip and conda torches ship them, Debian's are in `apt-get install libtorch-dev`)");
}

// c10 sits beside libtorch_cpu; Debian names it by version (libc10.so.1.13).
std::string find_c10(const std::string& lib_dir) {
  std::string best;
  if (DIR* d = ::opendir(lib_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("libc10.so", 0) == 0 && (best.empty() || name.size() < best.size())) best = name;
    }
    ::closedir(d);
  }
  return best.empty() ? std::string() : lib_dir + "/" + best;
}

// Whether torch was built with the C++11 std::string ABI: its mangled names
// then mention std::__cxx11. Read from the library, so no Python is needed.
bool uses_cxx11_abi(const std::string& c10) {
  std::ifstream in(c10, std::ios::binary);
  static constexpr char kNeedle[] = "St7__cxx11";
  constexpr size_t kNeedleLen = sizeof(kNeedle) - 1;
  std::string carry;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    std::string chunk = carry + std::string(buf.data(), size_t(in.gcount()));
    if (chunk.find(kNeedle) != std::string::npos) return true;
    carry = chunk.size() >= kNeedleLen ? chunk.substr(chunk.size() - kNeedleLen) : chunk;
  }
  return false;
}

// The first line of a compiler log that says "error", to put in one line.
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("error") != std::string::npos) return line.size() > 300 ? line.substr(0, 300) + "..." : line;
  return {};
}

std::string now_text() {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

BridgeBuildResult failed(std::string error) {
  BridgeBuildResult r;
  r.outcome = Outcome::Failed;
  r.error = std::move(error);
  return r;
}

}  // namespace

BridgeBuildResult build_bridge(const BridgeBuildRequest& req) {
  const auto& torch = req.torch;
  if (torch.library.empty()) return failed("no libtorch_cpu.so to build against");
  if (req.cache_root.empty()) return failed("no cache directory: set PTPROF_BRIDGE_CACHE (or XDG_CACHE_HOME or HOME)");
  if (!exists(req.kit_dir + "/agent/torch/bridge.cpp"))
    return failed("the bridge sources are missing from " + req.kit_dir + " (is ptprof installed completely?)");
  if (!make_dirs(req.cache_root))
    return failed("cannot create the cache directory " + req.cache_root + ": " + std::strerror(errno));

  const std::string key =
      req.prebuilt ? bridge::prebuilt_key(torch, bridge::kSourceHash) : bridge::cache_key(torch, bridge::kSourceHash);
  BridgeBuildResult r;
  r.dir = req.cache_root + "/" + key;
  r.library = r.dir + "/" + bridge::kLibraryName;
  const std::string marker = req.cache_root + "/." + key + ".failed";

  CacheLock lock(req.cache_root + "/." + key + ".lock");
  if (!lock.held()) return failed("cannot lock " + req.cache_root + ": " + std::strerror(errno));
  if (!req.force && exists(r.library)) {
    r.outcome = Outcome::Cached;
    return r;
  }
  if (!req.run_id.empty() && exists(marker)) {
    std::string text = read_file(marker);
    auto nl = text.find('\n');
    if (nl != std::string::npos && text.substr(0, nl) == req.run_id) {
      auto f = failed(text.substr(nl + 1));
      f.failed_before = true;
      return f;
    }
  }
  auto fail = [&](const std::string& error) {
    write_file(marker, req.run_id + "\n" + error);
    return failed(error);
  };

  if (req.no_build)
    return fail("none is cached in " + req.cache_root + " and PTPROF_BRIDGE_BUILD=0 forbids building one");
  auto found_compiler = find_compiler();
  if (!found_compiler) return fail(found_compiler.error());
  const std::vector<std::string>& compiler = *found_compiler;
  auto found_include = find_headers(torch);
  if (!found_include) return fail(found_include.error());
  const std::string& include = *found_include;
  std::string c10 = find_c10(torch.lib_dir);
  if (c10.empty()) return fail("no libc10.so beside " + torch.library + " (an incomplete torch installation?)");
  const bool cxx11 = uses_cxx11_abi(c10);

  const std::string work = req.cache_root + "/." + key + ".build." + std::to_string(::getpid());
  remove_tree(work);
  if (!make_dirs(work)) return fail("cannot create " + work + ": " + std::strerror(errno));

  std::vector<std::string> argv = compiler;
  for (const char* flag : {"-std=c++20", "-O2", "-fPIC", "-shared", "-DNDEBUG", "-fvisibility=hidden",
                           "-fvisibility-inlines-hidden", "-w"})
    argv.push_back(flag);
  argv.push_back(std::string("-D_GLIBCXX_USE_CXX11_ABI=") + (cxx11 ? "1" : "0"));
  for (const char* dir : {"/common/include", "/agent/include", "/agent/torch"})
    argv.push_back("-I" + req.kit_dir + dir);
  // Not -isystem: for /usr/include (Debian's torch) that would reorder the
  // compiler's own system directories and break #include_next.
  if (include != "/usr/include" && include != "/usr/lib/../include") argv.push_back("-I" + include);
  argv.push_back("-I" + include + "/torch/csrc/api/include");
  for (const char* unit : bridge::kCompileUnits) argv.push_back(req.kit_dir + "/" + unit);
  // The libraries by path: Debian has no unversioned libc10.so without -dev.
  argv.insert(argv.end(), {torch.library, c10});
  if (!req.prebuilt) argv.push_back("-Wl,-rpath," + torch.lib_dir);
  argv.insert(argv.end(), {"-Wl,--as-needed", "-Wl,-z,now", "-o", work + "/" + bridge::kLibraryName});

  if (req.on_compile_start) req.on_compile_start(req);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string log_path = work + "/" + bridge::kLogName;
  {
    std::string cmdline;
    for (const auto& a : argv) cmdline += (cmdline.empty() ? "" : " ") + a;
    write_file(log_path, cmdline + "\n");
  }
  Finished done = run_to_completion(argv, helper_environment(), log_path + ".out");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string log = read_file(log_path + ".out");
  write_file(log_path, read_file(log_path) + log);
  ::unlink((log_path + ".out").c_str());
  if (!done.started || done.exit_status != 0) {
    const std::string kept_log = req.cache_root + "/." + key + ".build.log";
    ::rename(log_path.c_str(), kept_log.c_str());
    remove_tree(work);
    std::string what =
        !done.started ? done.error
                      : "the compiler (" + compiler[0] + ") exited with status " + std::to_string(done.exit_status);
    std::string err = first_error(log);
    auto f = fail(what + (err.empty() ? "" : ": " + err) + " (full log: " + kept_log + ")");
    f.compile_started = true;
    return f;
  }

  std::ostringstream info;
  info << "torch_version = " << torch.version << "\n"
       << "libtorch_cpu = " << torch.library << "\n"
       << "libtorch_cpu_bytes = " << torch.library_bytes << "\n"
       << "headers = " << include << "\n"
       << "cxx11_abi = " << (cxx11 ? 1 : 0) << "\n"
       << "cuda = " << (exists(torch.lib_dir + "/libtorch_cuda.so") ? 1 : 0) << "\n"
       << "compiler = " << compiler[0] << "\n"
       << "bridge_sources = " << bridge::kSourceHash << "\n"
       << "kind = " << (req.prebuilt ? "prebuilt" : "cached") << "\n"
       << "built = " << now_text() << "\n"
       << "build_seconds = " << r.seconds << "\n";
  if (!write_file(work + "/" + bridge::kInfoName, info.str())) return fail("cannot write " + work);
  // Publish whole or not at all: readers only ever see a complete entry.
  if (exists(r.dir)) {
    const std::string old = work + ".old";
    ::rename(r.dir.c_str(), old.c_str());
    remove_tree(old);
  }
  if (::rename(work.c_str(), r.dir.c_str()) != 0) {
    std::string e = std::strerror(errno);
    remove_tree(work);
    return fail("cannot move the built bridge to " + r.dir + ": " + e);
  }
  ::unlink(marker.c_str());
  r.outcome = Outcome::Built;
  return r;
}

}  // namespace ptprof::launcher
