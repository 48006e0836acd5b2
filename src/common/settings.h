// Every MOEJIT_* environment variable, in one registry: name, type, default,
// whether it changes cache keys, and what it means. Values are validated when
// read; `moejit settings` prints the registry as the README's table.
#pragma once

#include <llvm/Support/Error.h>

#include <string>
#include <string_view>
#include <vector>

namespace moejit::settings {

enum class Type { Path, Bool, Choice, Count };

struct Setting {
  std::string_view name;
  Type type;
  std::string_view default_text; ///< as the README shows it
  bool changes_cache_keys;
  std::string_view meaning;
  std::vector<std::string_view> choices; ///< Choice only
};

const std::vector<Setting> &registry();

/// The registry entry of `name`; nullptr for a name not in it.
const Setting *find(std::string_view name);

/// The value of `name` from the environment, validated against its type
/// ("" when unset; for Bool "0" or "1"; for Choice one of the choices or "";
/// for Count a whole number from 1 to kMaxCount in decimal).
/// InvalidArgument naming the variable, the value and what is allowed.
llvm::Expected<std::string> read(std::string_view name);
/// read() of a Bool setting; `fallback` when unset.
llvm::Expected<bool> readBool(std::string_view name, bool fallback = false);
/// Largest value a Count setting takes.
inline constexpr unsigned kMaxCount = 1024;
/// read() of a Count setting; 0 when unset.
llvm::Expected<unsigned> readCount(std::string_view name);

/// read() of every setting in the registry; InvalidArgument naming each bad
/// value (joined by "; ") when there is one. The library reads a setting
/// when it needs it, and some only warn (MOEJIT_DEBUG_PIPELINES,
/// MOEJIT_CACHE_TRUST, MOEJIT_LOG_LEVEL through the logger): a tool that
/// prepares for the runtime (moejit warm) checks them all first, so a typo
/// fails it rather than the application later, or warms the wrong keys.
llvm::Error checkAll();

/// The registry as a Markdown table (the README's settings table).
std::string markdownTable();

} // namespace moejit::settings
