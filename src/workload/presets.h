// Named expert-MLP shapes of public models (`moejit warm --model NAME`).
// The shipped tuning tables in cache/tuning cover these and the seed shape.
#pragma once

#include "moejit/moejit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace moejit::workload {

struct Preset {
  std::string name;
  MoeShape shape;
};

/// qwen3-30b-a3b, qwen3-235b-a22b, mixtral-8x7b, deepseek-v2-lite, olmoe-1b-7b.
const std::vector<Preset> &presets();

/// The shape of a preset; nullopt for an unknown name.
std::optional<MoeShape> presetShape(const std::string &name);

} // namespace moejit::workload
