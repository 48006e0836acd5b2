// Atomic publication of a file: readers see the old file or the new one,
// never half of one, and a writer killed midway leaves only a temporary file
// (named <path>.tmp-XXXXXXXX) that nobody reads. The writer holds a shared
// flock on its temporary file while writing, so cleaners (moejit cache
// verify --fix / prune) can tell a live writer's file from a dead one's.
#pragma once

#include "store/file_lock.h"

#include <string>

namespace moejit::store {

/// Marks the temporary files writeFileAtomically leaves when killed.
inline constexpr const char *kTempMarker = ".tmp-";

/// Creates the parent directories, writes `bytes` to a unique temporary file
/// next to `path`, fsyncs it and renames it over `path`. False with `why`
/// set on failure (nothing is left behind then). With `lease`, the published
/// file stays open with its shared lock held, handed over in `*lease`: the
/// lock is taken before the file gets its name, so no cleaner can remove it
/// between publication and use.
bool writeFileAtomically(const std::string &path, const std::string &bytes, std::string &why,
                         FileLock *lease = nullptr);

} // namespace moejit::store
