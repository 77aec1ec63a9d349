/* An empty libcuda.so.1 (see tests/CMakeLists.txt): present, and nothing else. */
int ptprof_stub_libcuda_is_empty(void) { return 1; }
