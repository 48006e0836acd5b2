// Workload identity: validation, canonical text and sha256 id of a MoeShape.
#pragma once

#include "moejit/moejit.hpp"

#include <llvm/Support/Error.h>

#include <string>

namespace moejit::workload {

/// Bumped when the meaning of the canonical text changes.
inline constexpr int kFormatVersion = 1;

llvm::Error validateShape(const MoeShape &shape);
std::string canonicalText(const MoeShape &shape);
/// Lower-case hex sha256 of canonicalText(shape).
std::string workloadId(const MoeShape &shape);
/// Lower-case hex sha256 of arbitrary text.
std::string sha256Hex(llvm::StringRef text);

} // namespace moejit::workload
