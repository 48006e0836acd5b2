// JSON from files that may be hostile: llvm::json::parse recurses once per
// nesting level, so a deeply nested file would overflow the stack, and a
// huge one would be parsed whole. The limits are checked first.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/JSON.h>

#include <cstddef>

namespace moejit {

struct JsonLimits {
  size_t max_bytes;
  int max_depth; ///< arrays and objects open at once
};

/// llvm::json::parse of `text` once it is within `limits`; InvalidArgument
/// naming the limit otherwise, or the key an object holds twice.
llvm::Expected<llvm::json::Value> parseBoundedJson(llvm::StringRef text, const JsonLimits &limits);

} // namespace moejit
