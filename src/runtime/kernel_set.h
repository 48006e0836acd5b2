// KernelSet implementation: the loaded kernels of one shape on one device,
// the argument checks and layout of `run`, which hands the launches to
// runtime/launch_sequence.
#pragma once

#include "driver/driver.h"
#include "moejit/moejit.hpp"
#include "runtime/builder.h"
#include "runtime/launch_params.h"
#include "runtime/launch_sequence.h"
#include "runtime/planner.h"

#include <memory>
#include <vector>

namespace moejit::runtime {

/// The largest T one run of `shape` supports: the T*k sorted rows are
/// indexed with int32 (with headroom for tile padding).
int64_t maxTokens(const MoeShape &shape);

/// What one run of T > 0 tokens launches over. A run whose GEMM row tiles
/// would pass one launch's grid is split into calls of `call_tokens`
/// tokens (the last one shorter), one after the other on the stream, each
/// on the same workspace; `bucket`, `geometry` and `workspace` are the
/// first call's.
struct RunLayout {
  int bucket;
  LaunchGeometry geometry;
  WorkspaceLayout workspace;
  int64_t call_tokens;     ///< T where one call holds the run
  size_t workspace_needed; ///< for every call of the run
};

/// The layout of a run of `tokens` (> 0) under `plan`, once T is known to
/// be at most `max_tokens` (maxTokens(shape), computed once by the caller:
/// this is the hot path); InvalidArgument naming the limit otherwise.
/// Nothing here can overflow.
llvm::Expected<RunLayout> runLayout(const MoeShape &shape, const Plan &plan, Combine combine,
                                    int64_t tokens, int64_t max_tokens);

/// The arguments of the call over tokens [first, first + count) of a
/// checked run `args` (a split run's calls): its rows of x, y and the
/// routing, the rest as they are.
MoeArgs callArgs(const MoeShape &shape, const MoeArgs &args, int64_t first, int64_t count);

/// The argument check of `run`: no null or misaligned pointer, every
/// tensor's byte count and address range computed without overflow, y
/// overlapping no input or the workspace, and a workspace of at least
/// `workspace_needed` bytes. InvalidArgument or WorkspaceTooSmall naming
/// the argument.
llvm::Error checkRunArgs(const MoeShape &shape, const MoeArgs &args, size_t workspace_needed);

class KernelSetImpl;

/// The kernel set of `shape` under `plan` and `combine` on `device`: every
/// kernel they use fetched from `store` or compiled (options.no_compile: a
/// miss is an error), then loaded. What Runtime::get and the bench's
/// fixed-plan sets are made by.
llvm::Expected<std::shared_ptr<KernelSetImpl>>
buildKernelSet(const driver::Device &device, const MoeShape &shape, Plan plan, Combine combine,
               const Arch &arch, store::CubinStore &store, const BuildOptions &options = {});

class KernelSetImpl final : public KernelSet {
public:
  /// Loads `built` (from kernelSpecs(shape, plan, combine)) into the
  /// device's context.
  static llvm::Expected<std::shared_ptr<KernelSetImpl>>
  load(const driver::Device &device, const MoeShape &shape, Plan plan, Combine combine,
       std::vector<BuiltKernel> built);

  size_t workspace_bytes(int64_t tokens) const override;
  void run(const MoeArgs &args, void *stream) const override;
  const MoeShape &shape() const override { return shape_; }
  const std::string &workload_id() const override { return id_; }
  std::vector<KernelInfo> kernels() const override;
  std::vector<BucketPlan> plan() const override;
  const std::string &plan_source() const override { return plan_.source; }
  Combine combine() const override { return combine_mode_; }

  /// `run` with errors as values; `stages` (Stage) other than all of them
  /// for tests that rerun part of a call on the workspace of the last
  /// (InvalidArgument for a run split into calls).
  llvm::Error enqueue(const MoeArgs &args, CUstream stream, unsigned stages = kAllStages) const;

private:
  /// The loaded GEMM for a planned config; nullptr if load() lacks it.
  const LoadedKernel *findGemm(codegen::KernelKind kind, const codegen::TileConfig &tile) const;

  driver::Device device_;
  MoeShape shape_;
  int64_t max_tokens_ = 0; ///< maxTokens(shape_)
  std::string id_;
  Plan plan_;
  Combine combine_mode_ = Combine::Deterministic;
  ModuleSet modules_;
  std::vector<codegen::KernelSpec> specs_;
  std::vector<LoadedKernel> kernels_; ///< parallel to specs_
  /// Keep the cache files open (shared flock) while loaded: prune skips them.
  std::vector<store::Lease> leases_;
  RoutingKernels routing_;
  const LoadedKernel *combine_ = nullptr; ///< null under Combine::Fast
  /// Per token bucket, the two GEMMs `run` launches (resolved at load time
  /// so that `run` does no search).
  std::vector<std::pair<const LoadedKernel *, const LoadedKernel *>> bucket_gemms_;
};

} // namespace moejit::runtime
