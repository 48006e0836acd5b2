#include "common/settings.h"

#include "common/error.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace moejit::settings {

const std::vector<Setting> &registry() {
  static const std::vector<Setting> all = {
      {"MOEJIT_CACHE_DIR",
       Type::Path,
       "`$XDG_CACHE_HOME/moejit`, else `~/.cache/moejit` (home from `HOME`, else the password "
       "database; with neither, memory only)",
       false,
       "root of the cubin cache and the tuning records (keys hold no paths)",
       {}},
      {"MOEJIT_CACHE_TRUST",
       Type::Choice,
       "`owner`",
       false,
       "`owner`: the cache root and everything under it must be owned by this user (or root) "
       "and writable by no one else, or nothing is loaded from it nor written to it; "
       "`shared`: the operator shares the root on purpose (owner and mode are not checked, new "
       "files follow the umask; links and special files are still refused)",
       {"owner", "shared"}},
      {"MOEJIT_COMBINE",
       Type::Choice,
       "`deterministic`",
       false,
       "how GEMM2's rows become y (`RuntimeOptions::combine`): `deterministic` (same inputs, "
       "same bits), `fast` (GEMM2 adds into y with reduce-adds: no combine pass and no partial "
       "buffer, low bits vary run to run), `batch-invariant` (deterministic, and a token's y "
       "does not depend on T or the other tokens: one tile plan for every T); the fast "
       "GEMM2s are kernels of their own, with their own cache entries",
       {"deterministic", "fast", "batch-invariant"}},
      {"MOEJIT_COMPILE_THREADS",
       Type::Count,
       "the CPUs this process may use: its affinity mask, lowered to its cgroup's CPU quota "
       "(a container's CPU limit)",
       false,
       "how many NVRTC programs compile at once (each takes ~65 MB while it runs); with more "
       "kernels to compile than twice this, kernels are grouped into fewer programs",
       {}},
      {"MOEJIT_DEBUG_PIPELINES",
       Type::Bool,
       "`0`",
       true,
       "`1`: kernels are compiled so that a wait on a pipeline barrier (warp-specialised GEMMs) "
       "traps after 10 s instead of spinning for ever: a broken pipeline fails the launch "
       "rather than hanging the process (for tests and debugging)",
       {}},
      {"MOEJIT_LOG_LEVEL",
       Type::Choice,
       "`warn`",
       false,
       "spdlog level; `info` logs each compile's start, end and duration",
       {"trace", "debug", "info", "warn", "error", "critical", "off"}},
      {"MOEJIT_NVRTC_LIBRARY",
       Type::Path,
       "the NVRTC the process has loaded, else `libnvrtc.so.13` on the loader's path, else "
       "`/usr/local/cuda/lib64/libnvrtc.so.13`",
       false,
       "the NVRTC library to compile with, and no other (needed only when something is "
       "compiled; its major version must be moejit's)",
       {}},
      {"MOEJIT_NO_COMPILE",
       Type::Bool,
       "`0`",
       false,
       "`1`: never compile; a kernel missing from the cache is an `ErrorCode::CacheMiss` "
       "naming the workload, kernel and key (proves a deployment's cache was warmed)",
       {}},
      {"MOEJIT_TUNING",
       Type::Choice,
       "`records`",
       false,
       "where tile configs come from: `records` (tuning record in the cache root, then the "
       "tables shipped in `cache/`, then the heuristic), `heuristic` (heuristic only), "
       "`first-use` (like `records`, but with no record in the cache root `get()` autotunes "
       "once and saves one)",
       {"records", "heuristic", "first-use"}},
  };
  return all;
}

const Setting *find(std::string_view name) {
  for (const Setting &s : registry())
    if (s.name == name)
      return &s;
  return nullptr;
}

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
std::string joined(const std::vector<std::string_view> &items) {
  std::string out;
  for (std::string_view c : items) {
    if (!out.empty())
      out += ", ";
    out.append(c.data(), c.size());
  }
  return out;
}
} // namespace

llvm::Expected<std::string> read(std::string_view name) {
  const Setting *s = find(name);
  if (!s)
    return makeError(ErrorCode::Internal, "{} is not a moejit setting", name);
  const char *raw = std::getenv(std::string(name).c_str());
  if (!raw || !*raw)
    return std::string();
  const std::string value = raw;
  switch (s->type) {
  case Type::Path:
    return value;
  case Type::Bool: {
    const std::string v = lower(value);
    if (v == "1" || v == "true" || v == "yes" || v == "on")
      return std::string("1");
    if (v == "0" || v == "false" || v == "no" || v == "off")
      return std::string("0");
    return makeError(ErrorCode::InvalidArgument,
                     "{}={}: expected 1, 0, true, false, yes, no, on or off", name, value);
  }
  case Type::Count: {
    unsigned n = 0;
    if (llvm::StringRef(value).getAsInteger(10, n) || n < 1 || n > kMaxCount ||
        value.find_first_not_of("0123456789") != std::string::npos)
      return makeError(ErrorCode::InvalidArgument, "{}={}: expected a whole number from 1 to {}",
                       name, value, kMaxCount);
    return std::to_string(n);
  }
  case Type::Choice: {
    const std::string v = lower(value);
    for (std::string_view c : s->choices)
      if (v == c)
        return v;
    return makeError(ErrorCode::InvalidArgument, "{}={}: expected one of {}", name, value,
                     joined(s->choices));
  }
  }
  return makeError(ErrorCode::Internal, "{}: unknown setting type", name);
}

llvm::Expected<bool> readBool(std::string_view name, bool fallback) {
  auto v = read(name);
  if (!v)
    return v.takeError();
  return v->empty() ? fallback : *v == "1";
}

llvm::Expected<unsigned> readCount(std::string_view name) {
  auto v = read(name);
  if (!v)
    return v.takeError();
  return v->empty() ? 0u : static_cast<unsigned>(std::stoul(*v));
}

llvm::Error checkAll() {
  std::string bad;
  for (const Setting &s : registry())
    if (auto value = read(s.name); !value)
      bad += (bad.empty() ? "" : "; ") + errorMessage(value.takeError());
  if (bad.empty())
    return llvm::Error::success();
  return makeError(ErrorCode::InvalidArgument, "{}", bad);
}

std::string markdownTable() {
  std::string out = "| variable | type | default | changes cache keys | meaning |\n"
                    "|---|---|---|---|---|\n";
  for (const Setting &s : registry()) {
    std::string type = s.type == Type::Path    ? "path"
                       : s.type == Type::Bool  ? "bool"
                       : s.type == Type::Count ? fmt::format("count (1 to {})", kMaxCount)
                                               : "one of " + joined(s.choices);
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", s.name, type, s.default_text,
                       s.changes_cache_keys ? "yes" : "no", s.meaning);
  }
  return out;
}

} // namespace moejit::settings
