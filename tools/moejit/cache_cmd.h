// moejit cache list | verify | prune: show, check and trim the cubin cache.
#pragma once

#include "cli.h"

namespace moejit::cli {

/// The subcommand is one of the words list, verify, prune among `args`.
int runCache(Args args);

} // namespace moejit::cli
