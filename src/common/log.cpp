#include "common/log.h"

#include "common/error.h"
#include "common/settings.h"

#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace moejit {

namespace {

/// stderr ("[moejit W] ..."), or a host process's callback once one is set.
class RoutingSink final : public spdlog::sinks::base_sink<std::mutex> {
public:
  void route(LogCallback callback, void *user) {
    std::lock_guard<std::mutex> lock(mutex_);
    callback_ = callback;
    user_ = user;
  }

protected:
  void sink_it_(const spdlog::details::log_msg &msg) override {
    if (callback_) {
      const std::string text(msg.payload.data(), msg.payload.size());
      callback_(static_cast<int>(msg.level), text.c_str(), user_);
      return;
    }
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }

private:
  LogCallback callback_ = nullptr;
  void *user_ = nullptr;
};

const std::shared_ptr<RoutingSink> &routingSink() {
  static const std::shared_ptr<RoutingSink> sink = std::make_shared<RoutingSink>();
  return sink;
}

} // namespace

void setLogCallback(LogCallback callback, void *user) { routingSink()->route(callback, user); }

spdlog::logger &logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto log = std::make_shared<spdlog::logger>("moejit", routingSink());
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
