// Logging through spdlog. The hot path (KernelSet::run) logs nothing.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace moejit {

/// The library's logger ("moejit"); level from MOEJIT_LOG_LEVEL (default warn).
spdlog::logger &logger();

/// Logs `message` at warn level the first time `key` is seen in this process.
void warnOnce(const std::string &key, const std::string &message);

} // namespace moejit
