// Atomic publication of a file: readers see the old file or the new one,
// never half of one, and a writer killed midway leaves only a temporary file
// (named <name>.tmp-XXXXXXXX) that nobody reads. The writer holds a shared
// flock on its temporary file while writing, so cleaners (moejit cache
// verify --fix / prune, and the next successful publish into the folder)
// can tell a live writer's file from a dead one's.
#pragma once

#include "common/safe_fs.h"
#include "store/file_lock.h"

#include <string>

namespace moejit::store {

/// Marks the temporary files writeFileAtomically leaves when killed.
inline constexpr const char *kTempMarker = ".tmp-";

/// Why a write failed: the text, and the errno behind it (0 for a refusal,
/// such as an untrusted folder or a link).
struct WriteError {
  std::string why;
  int errnum = 0;
};

/// Writes `bytes` to a unique temporary file next to `name` in `dir`
/// (0600 under Trust::Owner), fsyncs it and renames it over `name`, then
/// removes the folder's temporary files whose writers are gone. False with
/// `error` set on failure (nothing is left behind then). With `lease`, the
/// published file stays open with its shared lock held, handed over in
/// `*lease`: the lock is taken before the file gets its name, so no cleaner
/// can remove it between publication and use.
bool writeFileAtomically(const safefs::Dir &dir, llvm::StringRef name, const std::string &bytes,
                         WriteError &error, FileLock *lease = nullptr);

/// Removes the temporary files in `dir` that no writer holds; how many.
size_t removeStaleTemps(const safefs::Dir &dir);

} // namespace moejit::store
