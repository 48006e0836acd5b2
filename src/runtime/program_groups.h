// Which kernels NVRTC compiles together. Every program costs NVRTC a fixed
// ~35 ms (its built-in header, module setup, ptxas start) whatever it
// holds, so on few cores fewer, larger programs finish sooner; with cores
// to spare, one kernel per program finishes soonest.
#pragma once

#include "codegen/generate.h"

#include <llvm/ADT/ArrayRef.h>

#include <cstddef>
#include <vector>

namespace moejit::runtime {

/// NVRTC's time for one kernel alone, roughly, on one core of the 2-core
/// build machine (NOTES.md, sessions 27 and 33): enough to order and group
/// them.
double estimatedCompileMs(const codegen::KernelSpec &spec);

/// What one program more costs, whatever it holds. Session 27 measured 31-41
/// ms (merging two kernels' units); session 42, the seed shape's ten kernels
/// as seven programs against five, ~60 ms a program of CPU (1.78 s against
/// 1.66 s). At 35 the ten went into seven programs for no shorter wall.
inline constexpr double kProgramFixedMs = 60;

/// Groups `specs` (indices into it) into NVRTC programs for `workers`
/// threads, the programs longest first. Up to 2 x workers kernels, each
/// alone; beyond, the cheapest program of a family merges with the next
/// cheapest of it, step by step (no program past the dearest kernel or 3/4
/// of a worker's share), and of the steps the one whose estimated finish on
/// `workers` threads is soonest is kept. Each index is in exactly one
/// program; a program holds one codegen::programFamily.
std::vector<std::vector<size_t>> groupIntoPrograms(llvm::ArrayRef<codegen::KernelSpec> specs,
                                                   unsigned workers);

/// When the last of `programs` (indices into `specs`) would finish on
/// `workers` threads taking them longest first, by the estimates: a program
/// costs kProgramFixedMs and each kernel its estimate less that.
double estimatedFinishMs(llvm::ArrayRef<codegen::KernelSpec> specs,
                         const std::vector<std::vector<size_t>> &programs, unsigned workers);

} // namespace moejit::runtime
