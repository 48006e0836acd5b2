// The tuning tables shipped with moejit: cache/tuning/<gpu slug>/*.json,
// embedded into the library at build time (cmake/embed_files.cmake), so a
// deployment needs no file beside the binary to skip the heuristic.
#pragma once

#include "tune/record.h"

#include <vector>

namespace moejit::tune {

struct ShippedText {
  const char *path; ///< relative to cache/tuning/, e.g. "nvidia-h200/seed.json"
  const char *text; ///< the file's JSON
};

/// Every embedded table, sorted by path (generated; possibly none).
const std::vector<ShippedText> &embeddedTuningTables();

/// The tables of `texts` that parseRecord accepts; each other one is logged
/// (a broken table must not stop get(), and the shipped-table test names it).
std::vector<TuningRecord> parseShippedTables(const std::vector<ShippedText> &texts);

/// parseShippedTables(embeddedTuningTables()), parsed on first use.
const std::vector<TuningRecord> &shippedTables();

} // namespace moejit::tune
