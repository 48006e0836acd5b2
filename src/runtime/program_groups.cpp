#include "runtime/program_groups.h"

#include <algorithm>
#include <functional>
#include <string>

namespace moejit::runtime {

using codegen::KernelKind;
using codegen::KernelSpec;

double estimatedCompileMs(const KernelSpec &spec) {
  // Measured alone (NVRTC only, -minimal and each family's options) on the
  // seed and deepseek-v2-lite shapes, 2-core machine, idle (NOTES.md,
  // sessions 27 and 33).
  switch (spec.kind) {
  case KernelKind::Gemm1:
  case KernelKind::Gemm2:
    if (!spec.usesMma())
      return 120;
    if (spec.tile.swap) // 32 and 64 rows: one main loop; wider: one per token width
      return spec.tile.bm <= 32 ? 170 : spec.tile.bm <= 64 ? 200 : spec.tile.bm <= 128 ? 400 : 1000;
    if (spec.tile.ws) // persistent warp-specialised; GEMM1's epilogue fuses SiLU.up
      return spec.kind == KernelKind::Gemm1 ? 430 : 280;
    return 180; // mma and wgmma
  case KernelKind::RouteWide:
    return 230;
  case KernelKind::RouteScatter:
    return 200;
  case KernelKind::RouteBlock:
    return 155;
  case KernelKind::Combine:
    return 90;
  default: // count, scan, references
    return 55;
  }
}

namespace {

struct Program {
  std::vector<size_t> members;
  std::string family;
  double ms; ///< estimated
};

bool cheaper(const Program &a, const Program &b) { return a.ms < b.ms; }

/// When the last of programs taking `ms` would finish on `workers` threads
/// that take them longest first, as the builder's pool does.
double finishMs(std::vector<double> ms, unsigned workers) {
  std::sort(ms.begin(), ms.end(), std::greater<>());
  std::vector<double> load(std::max(1u, workers), 0.0);
  for (double m : ms)
    *std::min_element(load.begin(), load.end()) += m;
  return *std::max_element(load.begin(), load.end());
}

double makespan(const std::vector<Program> &programs, unsigned workers) {
  std::vector<double> ms;
  for (const Program &p : programs)
    ms.push_back(p.ms);
  return finishMs(std::move(ms), workers);
}

} // namespace

double estimatedFinishMs(llvm::ArrayRef<KernelSpec> specs,
                         const std::vector<std::vector<size_t>> &programs, unsigned workers) {
  std::vector<double> ms;
  for (const std::vector<size_t> &p : programs) {
    double program_ms = kProgramFixedMs;
    for (size_t i : p)
      program_ms += estimatedCompileMs(specs[i]) - kProgramFixedMs;
    ms.push_back(program_ms);
  }
  return finishMs(std::move(ms), workers);
}

std::vector<std::vector<size_t>> groupIntoPrograms(llvm::ArrayRef<KernelSpec> specs,
                                                   unsigned workers) {
  workers = std::max(1u, workers);
  std::vector<Program> programs;
  for (size_t i = 0; i < specs.size(); ++i)
    programs.push_back({{i}, codegen::programFamily(specs[i]), estimatedCompileMs(specs[i])});
  // No program past three quarters of a worker's share (or the dearest
  // kernel): two dear kernels in one program would leave a thread idle
  // while it compiles (deepseek-v2-lite's 256-row swap-AB pair, ~1 s each).
  double total = 0, dearest = 0;
  for (const Program &p : programs) {
    total += p.ms;
    dearest = std::max(dearest, p.ms);
  }
  const double cap = std::max(dearest, 0.75 * total / workers);
  // Merge the cheapest program that has a partner with its cheapest
  // partner, again and again, and keep the step that finishes soonest
  // (the later of equals: fewer programs, less CPU).
  std::vector<Program> best = programs;
  double best_ms = makespan(programs, workers);
  while (specs.size() > 2 * static_cast<size_t>(workers)) {
    std::stable_sort(programs.begin(), programs.end(), cheaper);
    bool merged = false;
    for (size_t a = 0; a < programs.size() && !merged; ++a)
      for (size_t b = a + 1; b < programs.size(); ++b) {
        if (programs[b].family != programs[a].family ||
            programs[a].ms + programs[b].ms - kProgramFixedMs > cap)
          continue;
        Program &into = programs[a];
        into.members.insert(into.members.end(), programs[b].members.begin(),
                            programs[b].members.end());
        into.ms += programs[b].ms - kProgramFixedMs;
        programs.erase(programs.begin() + static_cast<std::ptrdiff_t>(b));
        merged = true;
        break;
      }
    if (!merged)
      break;
    if (const double ms = makespan(programs, workers); ms <= best_ms) {
      best_ms = ms;
      best = programs;
    }
  }
  std::stable_sort(best.begin(), best.end(),
                   [](const Program &a, const Program &b) { return cheaper(b, a); });
  std::vector<std::vector<size_t>> out;
  for (Program &p : best) {
    std::sort(p.members.begin(), p.members.end());
    out.push_back(std::move(p.members));
  }
  return out;
}

} // namespace moejit::runtime
