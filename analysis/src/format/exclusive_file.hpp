// Creating and naming files in a directory that others may write to: never
// through a symlink planted there, never over a name that is taken.
#pragma once
#include <sys/types.h>

#include <string>

namespace ptprof::format::detail {

// Creates `path` for writing with O_CREAT|O_EXCL|O_NOFOLLOW: a descriptor, or
// -1 with errno (EEXIST when anything, a symlink included, has that name).
int create_exclusive(const std::string& path, mode_t mode = 0644);

// Renames `from` to `to` unless `to` exists (RENAME_NOREPLACE, or link and
// unlink where the file system lacks it): 0, or -1 with errno (EEXIST when
// the name is taken; nothing is replaced then).
int rename_no_replace(const std::string& from, const std::string& to);

// The n-th name to try when `path` is taken: "x.w000.bin" -> "x.w000-n.bin",
// other names get "-n" appended. n = 0 gives `path`.
std::string alternative_name(const std::string& path, unsigned n);

}  // namespace ptprof::format::detail
