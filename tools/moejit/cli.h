// Argument helpers shared by the moejit subcommands.
#pragma once

#include "moejit/moejit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace moejit::cli {

/// argv after the subcommand, consumed as options are read.
class Args {
public:
  Args(int argc, char **argv);
  /// Value of "--name VALUE" or "--name=VALUE", removed from the list.
  std::optional<std::string> value(const std::string &name);
  /// Every value of a repeatable option.
  std::vector<std::string> values(const std::string &name);
  bool flag(const std::string &name);
  /// Throws if anything was not consumed.
  void finish() const;

private:
  std::vector<std::string> rest_;
};

/// "k=8,hidden=2048,intermediate=768,experts=128,dtype=bf16" (keys may be
/// abbreviated to h, i, e). Validated.
MoeShape parseShape(const std::string &text);
std::string shapeText(const MoeShape &shape);
/// The shapes of every --shape S and --model NAME ("all": every preset);
/// the seed shape when there are none.
std::vector<MoeShape> shapesFromArgs(Args &args);

/// The shape shared by the seed cases (../shared/workloads/seed.json).
MoeShape seedShape();

struct BenchCase {
  std::string name;
  int64_t tokens;
  MoeShape shape;
};
std::vector<BenchCase> seedCases();

int runWarm(Args args);
int runBench(Args args);
/// `bench --jit`: Runtime::get timings; `self` is this program's path.
int runJitBench(Args args, const std::string &self);
/// One get() on a warm cache in this new process; prints its ms.
int runJitProbe(Args args);
int runCodegen(Args args);
int runInfo(Args args);
int runSettings(Args args);

} // namespace moejit::cli
