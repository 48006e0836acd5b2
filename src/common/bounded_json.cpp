#include "common/bounded_json.h"

#include "common/error.h"

namespace moejit {

namespace {

/// The deepest nesting of arrays and objects in `text`, outside strings,
/// stopping early once it passes `cap`.
int nestingDepth(llvm::StringRef text, int cap) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > cap)
        return deepest;
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return deepest;
}

} // namespace

llvm::Expected<llvm::json::Value> parseBoundedJson(llvm::StringRef text, const JsonLimits &limits) {
  if (text.size() > limits.max_bytes)
    return makeError(ErrorCode::InvalidArgument, "{} bytes of JSON, over the limit of {}",
                     text.size(), limits.max_bytes);
  if (nestingDepth(text, limits.max_depth) > limits.max_depth)
    return makeError(ErrorCode::InvalidArgument,
                     "JSON nested more than {} levels deep, over the limit", limits.max_depth);
  auto value = llvm::json::parse(text);
  if (!value)
    return makeError(ErrorCode::InvalidArgument, "not JSON: {}", errorMessage(value.takeError()));
  return value;
}

} // namespace moejit
