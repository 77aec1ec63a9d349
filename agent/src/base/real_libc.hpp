// The libc functions the agent interposes, as libc itself defines them.
//
// The agent exports its own dlopen and dlsym (api/libc_hooks.cpp), which the
// whole process binds to; the agent's own lookups must bypass them, or every
// library it opens would be taken for one the program loaded. These are the
// next definitions after the agent's: libc's.
#pragma once

namespace ptprof::agent {

using DlopenFn = void* (*)(const char*, int);
using DlsymFn = void* (*)(void*, const char*);

// libc's dlopen and dlsym, found once. The hooks call them through these
// pointers so that a call leaves by a tail call (glibc sees the original caller).
DlopenFn next_dlopen();
DlsymFn next_dlsym();

inline void* real_dlopen(const char* file, int mode) { return next_dlopen()(file, mode); }
inline void* real_dlsym(void* handle, const char* name) { return next_dlsym()(handle, name); }

}  // namespace ptprof::agent
