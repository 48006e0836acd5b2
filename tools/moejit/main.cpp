// moejit: warm the kernel cache, benchmark, or print generated source.
// Exit status: 0 done (and --help, --version), 1 a run-time failure, 2 a
// command line moejit cannot act on.
#include "cli.h"

#include <cstdio>
#include <exception>

namespace {

/// The deepest subcommand the parse reached ("moejit cache list"), for the
/// hint after a usage error.
const CLI::App &reached(const CLI::App &app) {
  const CLI::App *sub = &app;
  while (!sub->get_subcommands().empty())
    sub = sub->get_subcommands().front();
  return *sub;
}

std::string commandPath(const CLI::App &app) {
  std::string path = app.get_name();
  for (const CLI::App *sub = &app; !sub->get_subcommands().empty();) {
    sub = sub->get_subcommands().front();
    path += " " + sub->get_name();
  }
  return path;
}

int usageError(const CLI::App &app, const std::string &message) {
  std::fprintf(stderr, "moejit: usage error: %s (see '%s --help')\n", message.c_str(),
               commandPath(app).c_str());
  return 2;
}

/// CLI11 reports `moejit frob` and a bare `moejit cache` alike, as a
/// missing subcommand: name the word it did not know, or the commands.
int parseError(const CLI::App &app, const CLI::ParseError &e) {
  const CLI::App &at = reached(app);
  const auto commands = at.get_subcommands([](const CLI::App *sub) {
    return !sub->get_group().empty(); // the hidden ones are not for people
  });
  if (commands.empty() || !dynamic_cast<const CLI::RequiredError *>(&e))
    return usageError(app, e.what());
  std::string names;
  for (const CLI::App *sub : commands)
    names += (names.empty() ? "" : ", ") + sub->get_name();
  const std::vector<std::string> rest = at.remaining();
  if (!rest.empty() && rest.front().rfind('-', 0) != 0)
    return usageError(app, "unknown command '" + rest.front() + "' (commands: " + names + ")");
  return usageError(app, "a command is needed: " + names);
}

} // namespace

int main(int argc, char **argv) {
  using namespace moejit::cli;
  CLI::App app("moejit: fused MoE kernels generated at run time; warm their cache, benchmark "
               "them, or print their source.",
               "moejit");
  app.set_version_flag("--version", std::string("moejit ") + moejit::version());
  app.require_subcommand(1);
  const Command commands[] = {addWarm(app),    addBench(app, argv[0]), addJitProbe(app),
                              addInfo(app),    addCodegen(app),        addCache(app),
                              addSettings(app)};
  // After the commands: a subcommand inherits the footer its parent has then.
  app.footer("Run 'moejit COMMAND --help' for the options of a command.");
  if (argc < 2) { // no command: the overview, as a usage error
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
      return app.exit(e); // help on stdout, 0
    } catch (const CLI::CallForAllHelp &e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
      return app.exit(e);
    } catch (const CLI::ParseError &e) {
      return parseError(app, e);
    }
    for (const Command &c : commands)
      if (c.app->parsed())
        return c.run();
    return usageError(app, "no command");
  } catch (const UsageError &e) { // a combination the parser cannot express
    return usageError(app, e.what());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "moejit: error: %s\n", e.what());
    return 1;
  }
}
