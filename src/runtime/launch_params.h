// The launch parameter block as the host sees it.
#pragma once

#include "moe_launch_abi.cuh"

#include <cstdint>

namespace moejit::runtime {

// The block and the constants live in templates/moe_launch_abi.cuh, which
// NVRTC reads too.
using moejit_abi::kCombineThreads;
using moejit_abi::kRouteChunk;
using moejit_abi::kRouteBlockMaxAssignments;
using moejit_abi::kRouteWideMaxAssignments;
using moejit_abi::kRouteBlockMaxExperts;
using moejit_abi::route_block_warps;
using moejit_abi::kWsConsumerRegisters;
using moejit_abi::kWsProducerRegisters;
using moejit_abi::LaunchParams;

} // namespace moejit::runtime
