// A job of N + 1 processes that all run steps until STOP exists (at most a
// minute): each writes READY.<pid> after its first step, so that a test knows
// every process is registered before it triggers a window.
//   step_family <children> <ready-prefix> <stop-file>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "ptprof.h"

namespace {

void run_steps(const std::string& ready, const char* stop) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  bool announced = false;
  while (::access(stop, F_OK) != 0 && std::chrono::steady_clock::now() < deadline) {
    ptprof_step();
    ptprof_mark("tick");
    if (!announced) {
      if (FILE* f = std::fopen((ready + "." + std::to_string(::getpid())).c_str(), "w")) std::fclose(f);
      announced = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const int children = std::atoi(argv[1]);
  for (int i = 0; i < children; ++i) {
    if (::fork() == 0) {
      run_steps(argv[2], argv[3]);
      std::_Exit(0);
    }
  }
  run_steps(argv[2], argv[3]);
  while (::wait(nullptr) > 0) {
  }
  return 0;
}
