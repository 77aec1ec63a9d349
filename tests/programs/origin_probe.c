/* The library origin_dlopen loads from its own directory. */
__attribute__((visibility("default"))) int origin_probe(void) { return 42; }
