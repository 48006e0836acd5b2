// moejit settings: the MOEJIT_* variables, printed from the registry as the
// Markdown table the README shows (a test keeps the two equal).
#include "cli.h"

#include "common/settings.h"

#include <cstdio>

namespace moejit::cli {

int runSettings(Args args) {
  args.finish();
  std::fputs(settings::markdownTable().c_str(), stdout);
  return 0;
}

} // namespace moejit::cli
