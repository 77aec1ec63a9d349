// What a CUfunction points to in the stand-in driver: a name and a host
// function that takes the kernel's argument array.
#pragma once

struct StubFunction {
  const char* name;
  void (*run)(void** params);
};
