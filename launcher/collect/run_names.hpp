// The parts of a trace file's name that come from the run:
// <host>.<pid>[-<exec>].<run>.w<NNN>.bin (docs/format.md).
#pragma once
#include <string>
#include <string_view>

namespace ptprof::launcher {

// `host` as one safe file name component: [A-Za-z0-9._-] kept, anything else
// '_', no leading '.' and no "..", at most 64 characters; "localhost" when
// empty.
std::string file_safe_host(std::string_view host);

// A short random id, different for every run: runs that share a directory,
// a host name and a pid (containers, pid namespaces) still get names of their
// own. 8 hex digits.
std::string new_run_id();

}  // namespace ptprof::launcher
