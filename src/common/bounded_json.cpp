#include "common/bounded_json.h"

#include "common/error.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

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

/// The first key that one object of `text` holds twice (escapes decoded:
/// "gp\u0075" is "gpu"); nullopt when none does. `text` must be valid JSON
/// (llvm::json::parse accepted it), so every string ends.
std::optional<std::string> duplicateKey(llvm::StringRef text) {
  struct Open {
    bool object;
    bool expect_key;
    std::set<std::string> keys;
  };
  std::vector<Open> open;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      if (!open.empty() && open.back().object && open.back().expect_key) {
        open.back().expect_key = false;
        const llvm::StringRef quoted = text.slice(i, end + 1);
        auto key = llvm::json::parse(quoted);
        std::string name = quoted.str();
        if (key && key->getAsString())
          name = key->getAsString()->str();
        else if (!key)
          llvm::consumeError(key.takeError());
        if (!open.back().keys.insert(name).second)
          return name;
      }
      i = end;
    } else if (c == '{' || c == '[') {
      open.push_back({c == '{', c == '{', {}});
    } else if ((c == '}' || c == ']') && !open.empty()) {
      open.pop_back();
    } else if (c == ',' && !open.empty() && open.back().object) {
      open.back().expect_key = true;
    }
  }
  return std::nullopt;
}

/// `s` for a message: printable ASCII as is, other bytes as \xNN (keys come
/// from files that may be hostile).
std::string printable(llvm::StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  return out;
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
  // llvm::json keeps the last of a repeated key; a person, or another
  // parser, may read the first: a file that says two things is refused.
  if (const std::optional<std::string> key = duplicateKey(text))
    return makeError(ErrorCode::InvalidArgument, "duplicate key \"{}\"", printable(*key));
  return value;
}

} // namespace moejit
