// Code generation: a small deterministic unit per kernel that includes one
// template and instantiates it with the shape constants and tile config.
#pragma once

#include "codegen/tile_config.h"
#include "moejit/moejit.hpp"

#include <llvm/ADT/ArrayRef.h>

#include <string>
#include <vector>

namespace moejit::codegen {

/// Bumped whenever generated units change in a way templates don't show.
inline constexpr int kGeneratorVersion = 1;

enum class KernelKind {
  RouteCount,
  RouteScan,
  RouteScatter,
  RouteBlock, ///< the three above in one block, for T*k <= kRouteBlockMaxAssignments
  RouteWide,  ///< the three above in one launch over the grid, for T*k <= kRouteWideMaxAssignments
  Gemm1,
  Gemm2,
  Combine,
  ReferenceH, ///< GPU reference, for the benchmark's checks
  ReferenceY,
};

/// Everything that specialises one kernel.
struct KernelSpec {
  KernelKind kind;
  MoeShape shape;
  TileConfig tile; ///< used by Gemm1/Gemm2 on bf16/fp16 only
  /// Gemm2 only: add the weighted rows into y (Combine::Fast) instead of
  /// writing them to the partial buffer for the combine pass.
  bool add_to_y = false;

  /// True for the GEMMs of bf16/fp16 shapes (tensor cores).
  bool usesMma() const;
  /// A Gemm2 with add_to_y (the flag means nothing on other kinds).
  bool addsToY() const;
  /// A Gemm2 that writes partial blocked by its BN columns
  /// (moejit_abi::partial_block_offset): the warp-specialised one with a
  /// staged epilogue, not adding into y (kernels/moe_gemm_ws.cuh).
  bool blocksPartial() const;
  /// e.g. moe_gemm1_bf16_k8_h2048_i768_e128_bm128_bn64_s3_w2x2; a GEMM2
  /// that adds into y ends in _addy.
  std::string name() const;
  /// Threads per block.
  int threads() const;
  /// Dynamic shared memory per block.
  int dynamicSharedBytes() const;
};

const char *kindName(KernelKind kind);

/// The generated unit: the same spec gives the same bytes on every machine.
std::string generateSource(const KernelSpec &spec);

/// Kernels of one family may share an NVRTC program with each kernel's
/// binary what it is alone: PTX gives a module's dynamic shared memory the
/// largest alignment any of its kernels declares, which would move the
/// static shared memory of kernels that declare a smaller one (measured:
/// routing kernels rounded up to 1 KiB next to a GEMM). Kernels whose
/// templates declare the same (or none) are one family.
std::string programFamily(const KernelSpec &spec);

/// The NVRTC options the kernels of spec's programFamily add to
/// nvrtc::compileOptions: part of their programs' compile and their cache
/// keys.
std::vector<std::string> familyOptions(const KernelSpec &spec);

/// One NVRTC program holding every spec's unit (each include once, each unit
/// in its own namespace; the kernels keep their names). One spec: its unit.
/// Specs of one programFamily.
std::string generateProgram(llvm::ArrayRef<KernelSpec> specs);

} // namespace moejit::codegen
