// What the moejit subcommands share: how each one registers with the CLI11
// parser, the usage error, strict number parsing and the shape options.
#pragma once

#include "moejit/moejit.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llvm::json {
class Value;
}

namespace moejit::cli {

/// A command line moejit cannot act on: main prints it and exits 2 (a
/// run-time failure exits 1).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A subcommand: `app` is where its options were bound, `run` acts on them
/// once the whole command line parsed.
struct Command {
  CLI::App *app = nullptr;
  std::function<int()> run;
};

/// All of `text` as a base-10 integer in [lo, hi] (no sign but '-', no
/// space, no suffix, no hex); UsageError naming `what` otherwise.
int64_t parseInteger(std::string_view text, const std::string &what, int64_t lo, int64_t hi);

/// A CLI11 transform that accepts only what parseInteger accepts and leaves
/// the canonical decimal spelling (CLI11's own conversion reads "010" as
/// octal and "0x10" as hex); a CLI::Range after it checks the bounds.
CLI::Validator integerText();

/// The root of `--cache-dir` (default: store::defaultRoot()); a run-time
/// error when there is none (no home folder): commands that exist to fill or
/// look at the disk cache do not fall back to memory.
std::string cacheRoot(const std::string &given);

/// A CLI11 check that the text is not empty, for options whose absence
/// means a default (--cache-dir, --arch, --gpu, --json FILE): `--cache-dir
/// "$UNSET"` must not mean the default root (which prune would then empty).
CLI::Validator nonEmpty();

/// A CLI11 check that `parse(text)` does not throw UsageError or
/// moejit::Error; the message becomes CLI11's (option name first).
CLI::Validator checkedBy(std::function<void(const std::string &)> parse, std::string description);

/// A CLI11 check that the text is one of MOEJIT_COMBINE's modes (the
/// settings registry's choices), for the --combine options.
CLI::Validator combineMode();

/// "k=8,hidden=2048,intermediate=768,experts=128,dtype=bf16" (keys may be
/// abbreviated to h, i, e; omitted keys take the seed shape's values; each
/// key once, no empty item). Validated; UsageError or Error(InvalidShape)
/// otherwise.
MoeShape parseShape(const std::string &text);
std::string shapeText(const MoeShape &shape);

/// --shape S and --model NAME|all, repeatable, checked while parsing.
struct ShapeArgs {
  std::vector<std::string> shapes, models;
  CLI::Option *shape_option = nullptr, *model_option = nullptr;
};
void addShapeOptions(CLI::App &app, ShapeArgs &args);
/// The shapes of every --shape and --model (in that order); the seed shape
/// when there are none.
std::vector<MoeShape> shapesOf(const ShapeArgs &args);

/// Pretty-printed on stdout, then a newline (`--json`). A failed write is
/// reported when the command is done (main's checkStdout).
void printJson(const llvm::json::Value &value);

/// The shape shared by the seed cases (../shared/workloads/seed.json).
MoeShape seedShape();

struct BenchCase {
  std::string name;
  int64_t tokens;
  MoeShape shape;
};
std::vector<BenchCase> seedCases();

/// Each adds its subcommand to `app`.
Command addWarm(CLI::App &app);
/// `self` is this program's path: bench --jit runs it again (jit-probe).
Command addBench(CLI::App &app, const std::string &self);
/// `bench --jit`: Runtime::get timings, with `moejit jit-probe` as the new
/// processes.
int runJitBench(const std::vector<MoeShape> &shapes, int processes, const std::string &self);
/// One get() on a warm cache in this new process; prints its ms (hidden).
Command addJitProbe(CLI::App &app);
Command addCodegen(CLI::App &app);
Command addInfo(CLI::App &app);
Command addSettings(CLI::App &app);
Command addCache(CLI::App &app);

} // namespace moejit::cli
