#include "runtime/program_groups.h"

#include <algorithm>
#include <string>

namespace moejit::runtime {

using codegen::KernelKind;
using codegen::KernelSpec;

double estimatedCompileMs(const KernelSpec &spec) {
  // Measured alone, -minimal, the seed shape (2-core machine, idle).
  switch (spec.kind) {
  case KernelKind::Gemm1:
  case KernelKind::Gemm2:
    if (!spec.usesMma())
      return 120;
    if (spec.tile.ws && !spec.tile.swap)
      return 230; // persistent warp-specialised: 180-300
    return 180;   // swap-AB 150-210 (256-row tiles ~1000), mma and wgmma
  case KernelKind::RouteWide:
    return 330;
  case KernelKind::RouteScatter:
    return 250;
  case KernelKind::RouteBlock:
    return 160;
  default: // count, scan, combine, references
    return 65;
  }
}

std::vector<std::vector<size_t>> groupIntoPrograms(llvm::ArrayRef<KernelSpec> specs,
                                                   unsigned workers) {
  struct Program {
    std::vector<size_t> members;
    std::string family;
    double ms;
  };
  std::vector<Program> programs;
  for (size_t i = 0; i < specs.size(); ++i)
    programs.push_back({{i}, codegen::programFamily(specs[i]), estimatedCompileMs(specs[i])});
  const size_t target = 2 * static_cast<size_t>(std::max(1u, workers));
  auto cheaper = [](const Program &a, const Program &b) { return a.ms < b.ms; };
  while (programs.size() > target) {
    std::stable_sort(programs.begin(), programs.end(), cheaper);
    // The cheapest program that has a partner, with its cheapest partner.
    bool merged = false;
    for (size_t a = 0; a < programs.size() && !merged; ++a)
      for (size_t b = a + 1; b < programs.size(); ++b) {
        if (programs[b].family != programs[a].family)
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
  }
  std::stable_sort(programs.begin(), programs.end(),
                   [&](const Program &a, const Program &b) { return cheaper(b, a); });
  std::vector<std::vector<size_t>> out;
  for (Program &p : programs) {
    std::sort(p.members.begin(), p.members.end());
    out.push_back(std::move(p.members));
  }
  return out;
}

} // namespace moejit::runtime
