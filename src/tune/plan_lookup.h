// From tuning records to plans: what a record means for a shape on an
// arch, and the lookup order of Tuning::Records (record in the cache root,
// shipped table, heuristic).
#pragma once

#include "common/arch.h"
#include "tune/record.h"

namespace moejit::tune {

/// The record as a plan for `shape` on `arch`: InvalidArgument when the
/// record is for another workload, or a config breaks the tile rules
/// (checkMmaConfig), uses wgmma off sm_90a, or pairs bm values where the
/// smaller does not divide the larger. The tile rules are not applied to
/// fp32 shapes, whose kernels use one fixed SIMT tile whatever the plan says.
llvm::Expected<runtime::Plan> planFromRecord(const TuningRecord &record, const MoeShape &shape,
                                             const Arch &arch);

/// The lookup order for Tuning::Records (and FirstUse once tuned): the
/// record in `root`, then the shipped table, then runtime::heuristicPlan.
/// An unusable record or table is skipped with a warning (once). The
/// plan's `source` says which one was used ("tuning record <path>",
/// "shipped table", "heuristic").
runtime::Plan choosePlan(const MoeShape &shape, const Arch &arch, const std::string &gpu,
                         const std::string &root);
/// choosePlan with `shipped` standing in for shippedRecords() (tests).
runtime::Plan choosePlan(const MoeShape &shape, const Arch &arch, const std::string &gpu,
                         const std::string &root, const std::vector<TuningRecord> &shipped);

} // namespace moejit::tune
