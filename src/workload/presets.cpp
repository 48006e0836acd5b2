#include "workload/presets.h"

namespace moejit::workload {

const std::vector<Preset> &presets() {
  // {k, hidden, intermediate (per expert), experts}, bf16 as served.
  static const std::vector<Preset> all = {
      {"qwen3-30b-a3b", {8, 2048, 768, 128, DType::BF16}},
      {"qwen3-235b-a22b", {8, 4096, 1536, 128, DType::BF16}},
      {"mixtral-8x7b", {2, 4096, 14336, 8, DType::BF16}},
      {"deepseek-v2-lite", {6, 2048, 1408, 64, DType::BF16}},
      {"olmoe-1b-7b", {8, 2048, 1024, 64, DType::BF16}},
  };
  return all;
}

std::optional<MoeShape> presetShape(const std::string &name) {
  for (const Preset &p : presets())
    if (p.name == name)
      return p.shape;
  return std::nullopt;
}

} // namespace moejit::workload
