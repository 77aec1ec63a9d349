// Records ranges and marks whose names a JSON writer must not copy as they
// are: bytes that are not UTF-8 (a stray continuation byte, a truncated
// sequence, an encoded surrogate, an overlong form), control characters,
// quotes and backslashes; its thread is named the same way. For the test that
// every JSON output of ptprof stays valid JSON (tests/unit/cli/test_json_outputs.cpp).
//   odd_names [anything: its command line is recorded too]
#include <pthread.h>

#include "ptprof.h"

int main() {
  static const char* const kNames[] = {
      "bad \xff\xfe bytes", "truncated \xe2\x82",        "surrogate \xed\xa0\x80",
      "overlong \xc0\xaf",  "controls \x01\x1f\x7f end", "quote\" backslash\\ newline\n tab\t return\r",
      "fine \xe2\x82\xac",
  };
  ::pthread_setname_np(::pthread_self(), "thr\xff\x01\"");
  for (int i = 0; i < 3; ++i) {
    for (const char* name : kNames) {
      ptprof_range_push(name);
      ptprof_mark(name);
      ptprof_range_pop();
    }
    ptprof_step();
  }
  return 0;
}
