#include "common/log.h"

#include "common/error.h"
#include "common/settings.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>
#include <set>

namespace moejit {

spdlog::logger &logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto log = std::make_shared<spdlog::logger>("moejit", sink);
    log->set_pattern("[moejit %L] %v");
    auto level = settings::read("MOEJIT_LOG_LEVEL");
    log->set_level(level && !level->empty() ? spdlog::level::from_str(*level)
                                            : spdlog::level::warn);
    if (!level) // the logger cannot throw; the bad value is reported once
      log->warn("{}; using warn", errorMessage(level.takeError()));
    return log;
  }();
  return *instance;
}

void warnOnce(const std::string &key, const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen.insert(key).second)
      return;
  }
  logger().warn("{}", message);
}

} // namespace moejit
