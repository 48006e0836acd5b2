// The autotuner: on a GPU, compiles every candidate tile config in parallel,
// checks each against the GPU reference before it may win, then times them
// per token bucket (CUDA events, L2 flushed before each run, median) and
// keeps the fastest plan, which always includes the heuristic's own.
#pragma once

#include "common/arch.h"
#include "driver/driver.h"
#include "store/cubin_store.h"
#include "tune/record.h"

#include <functional>
#include <string>
#include <vector>

namespace moejit::tune {

struct TuneOptions {
  /// Buckets to tune (runtime::bucketOf numbering); empty: all. The others
  /// keep the heuristic's plan with no times.
  std::vector<int> buckets;
  /// Tokens of the correctness check every candidate must pass: not a power
  /// of two, so tiles end part-filled.
  int check_tokens = 1000;
  /// Time budget per config per bucket; runs are 3..15 within it.
  double target_ms = 120;
  /// Called with one line per stage (compile, check, each bucket).
  std::function<void(const std::string &)> progress;
};

/// The buckets `requested` (empty: all) in the order they are tuned: each
/// once, the largest first, so that the bucket tuned before a mid-sized one
/// is the next larger, whose persistent kernels every larger bucket runs
/// too: within the noise margin a mid bucket takes them rather than adding
/// a kernel of its own (the seed table's T=1024 GEMM2, bn192, had cost cold
/// get() ~0.25 s for 0.5%; NOTES.md, session 33). An error names a bucket
/// outside 0..kBucketCount-1.
llvm::Expected<std::vector<int>> tuningOrder(const std::vector<int> &requested);

/// A finalist timed twice, interleaved: the mean of its two medians, and
/// their spread relative to the lower (the noise of that card at that
/// moment).
struct FinalistTime {
  double ms = 0;
  double spread = 0;
};

/// Folds the medians of n finalists timed forwards then backwards (ABC CBA:
/// medians[i] and medians[2n-1-i] are finalist i's) into their times.
std::vector<FinalistTime> foldPasses(const std::vector<double> &medians);

/// Which finalist of a bucket wins, given their times, whose first
/// `preferred` entries are plans that add no kernel (the heuristic's plan,
/// the winner of the bucket tuned before): the first of those within the
/// margin of the fastest, else the fastest. The margin between a preferred
/// plan and the fastest is the larger of their two spreads, kept within
/// [floor, cap]: differences inside run-to-run noise then pick no kernel
/// of their own (plans share kernels and a cold get() compiles fewer),
/// while one noisy pass cannot hide a plan faster by more than `cap`.
size_t pickFinalist(const std::vector<FinalistTime> &times, size_t preferred, double floor = 0.01,
                    double cap = 0.05);

/// Tunes `shape` on `device` (arch is its target, e.g. "sm_90a"), compiling
/// through `store`. The record says which configs won per bucket, with the
/// measured whole-run times of the winner and of the heuristic's plan.
llvm::Expected<TuningRecord> autotune(const driver::Device &device, const Arch &arch,
                                      const MoeShape &shape, store::CubinStore &store,
                                      const TuneOptions &options = {});

} // namespace moejit::tune
