// The settings behind RuntimeOptions that more than Runtime reads: the
// cache-warming paths warm what a runtime with the same environment loads.
#pragma once

#include "moejit/moejit.hpp"

#include <llvm/Support/Error.h>

namespace moejit::api {

/// MOEJIT_COMBINE's mode (Deterministic when unset); InvalidArgument naming
/// the variable for a value that is not a mode.
llvm::Expected<Combine> combineSetting();

} // namespace moejit::api
