// Logging through spdlog. The hot path (KernelSet::run) logs nothing.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace moejit {

/// The library's logger ("moejit"); level from MOEJIT_LOG_LEVEL (default warn).
spdlog::logger &logger();

/// Where a host process wants moejit's messages: `level` is spdlog's
/// (0 trace .. 5 critical), `message` the text without moejit's prefix.
using LogCallback = void (*)(int level, const char *message, void *user);
/// Routes every later message to `callback` (nullptr: back to stderr).
void setLogCallback(LogCallback callback, void *user);

/// Logs `message` at warn level the first time `key` is seen in this process.
void warnOnce(const std::string &key, const std::string &message);

} // namespace moejit
