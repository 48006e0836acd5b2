// moejit: warm the kernel cache, benchmark, or print generated source.
// Exit status: 0 done (and --help, --version), 1 a run-time failure (a
// write to stdout that failed included), 2 a command line moejit cannot act
// on.
#include "cli.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <unistd.h>

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

/// A standard stream the caller closed (`moejit codegen >&-`) leaves its
/// number free, and the next open() (a cache file's) would take it and
/// receive what is printed. Each closed one is held by /dev/null opened the
/// other way round, so that writing to it fails (EBADF) and is reported
/// like any failed write (gnulib's stdopen does the same).
void holdClosedStreams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF)
      continue;
    const int held = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (held >= 0 && held != fd) { // the lower ones are open: it is fd
      ::dup2(held, fd);
      ::close(held);
    }
  }
}

/// `rc`, or 1 when what the command printed did not all reach stdout (a
/// full disk, a closed pipe or stream): output that was lost is a failure,
/// said once on stderr. llvm::outs() (the --json documents) keeps its write
/// error for its destructor at exit, which calls report_fatal_error and
/// aborts (SIGABRT, exit 134): the error is taken and cleared here.
int checkStdout(int rc) {
  std::string why;
  llvm::raw_fd_ostream &outs = llvm::outs();
  outs.flush();
  if (outs.has_error())
    why = outs.error().message();
  outs.clear_error();
  errno = 0;
  if (std::fflush(stdout) != 0 && why.empty())
    why = std::strerror(errno);
  if (std::ferror(stdout) && why.empty()) // an earlier write failed; its errno is gone
    why = "a write failed";
  if (why.empty())
    return rc;
  std::fprintf(stderr, "moejit: error: writing stdout: %s\n", why.c_str());
  return rc != 0 ? rc : 1;
}

/// This program's file, which bench --jit runs again: argv[0] is only a
/// name when moejit was found through PATH, and LLVM's ExecuteAndWait looks
/// nothing up ("Executable \"moejit\" doesn't exist!"). getMainExecutable
/// reads /proc/self/exe; argv[0] is what is left if that fails.
std::string selfPath(const char *argv0) {
  static const int in_this_binary = 0; // an address inside the executable
  std::string path = llvm::sys::fs::getMainExecutable(argv0, const_cast<int *>(&in_this_binary));
  return path.empty() ? argv0 : path;
}

int run(int argc, char **argv) {
  using namespace moejit::cli;
  CLI::App app("moejit: fused MoE kernels generated at run time; warm their cache, benchmark "
               "them, or print their source.",
               "moejit");
  app.set_version_flag("--version", std::string("moejit ") + moejit::version());
  app.require_subcommand(1);
  const std::string self = selfPath(argv[0]);
  const Command commands[] = {addWarm(app),    addBench(app, self), addJitProbe(app), addInfo(app),
                              addCodegen(app), addCache(app),       addSettings(app)};
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

} // namespace

int main(int argc, char **argv) {
  holdClosedStreams();
  return checkStdout(run(argc, argv));
}
