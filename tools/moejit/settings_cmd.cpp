// moejit settings: the MOEJIT_* variables, printed from the registry as the
// Markdown table the README shows (a test keeps the two equal).
#include "cli.h"

#include "common/settings.h"

#include <cstdio>

namespace moejit::cli {

Command addSettings(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand(
      "settings", "Print the MOEJIT_* environment variables as a Markdown table.");
  return {cmd, [] {
            std::fputs(settings::markdownTable().c_str(), stdout);
            return 0;
          }};
}

} // namespace moejit::cli
