// Atomic publication of a file: readers see the old file or the new one,
// never half of one, and a writer killed midway leaves only a temporary file
// (named <path>.tmp-XXXXXXXX) that nobody reads.
#pragma once

#include <string>

namespace moejit::store {

/// Marks the temporary files writeFileAtomically leaves when killed.
inline constexpr const char *kTempMarker = ".tmp-";

/// Creates the parent directories, writes `bytes` to a unique temporary file
/// next to `path`, fsyncs it and renames it over `path`. False with `why`
/// set on failure (nothing is left behind then).
bool writeFileAtomically(const std::string &path, const std::string &bytes, std::string &why);

} // namespace moejit::store
