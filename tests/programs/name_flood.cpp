// Records one mark under each of N distinct names (default 400,000 names of
// 60 bytes: more than a 16 MiB string arena, PTPROF_NAMES_MB=16, holds), then R marks under one
// more new name, from one thread: for the arena-full test. Pauses let the
// launcher drain; on a loaded machine that is not enough with the default
// 2 MiB ring, so test_losses.cpp gives the run a ring that holds every mark.
//   name_flood [names] [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "ptprof.h"

namespace {

void pause_every(long i) {
  if (i % 20000 == 19999) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

int main(int argc, char** argv) {
  const long names = argc > 1 ? std::atol(argv[1]) : 400'000;
  const long repeats = argc > 2 ? std::atol(argv[2]) : 100'000;
  char name[96];
  for (long i = 0; i < names; ++i) {
    std::snprintf(name, sizeof name, "name-flood-%08ld-padding-padding-padding-padding-padding", i);
    ptprof_mark(name);
    pause_every(i);
  }
  for (long i = 0; i < repeats; ++i) {
    ptprof_mark("name-flood-after-the-arena-is-full");
    pause_every(i);
  }
  std::printf("marks=%ld\n", names + repeats);
  return 0;
}
