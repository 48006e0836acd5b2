#include "progress.h"

#include <algorithm>
#include <chrono>
#include <unistd.h>

namespace moejit::cli {

ProgressLine::ProgressLine(std::FILE *stream)
    : stream_(stream), live_(::isatty(::fileno(stream)) == 1) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const std::string &text) {
  if (live_) {
    // "\r\033[K": back to the start, erase what the last update left.
    std::fprintf(stream_, "\r\033[K%s", text.c_str());
    shown_ = true;
  } else {
    std::fprintf(stream_, "%s\n", text.c_str());
  }
  std::fflush(stream_);
}

void ProgressLine::note(const std::string &text) {
  clear();
  std::fprintf(stream_, "%s\n", text.c_str());
  std::fflush(stream_);
}

void ProgressLine::clear() {
  if (!live_ || !shown_)
    return;
  std::fputs("\r\033[K", stream_);
  std::fflush(stream_);
  shown_ = false;
}

KernelProgress::KernelProgress(ProgressLine &line, const store::CubinStore &store, size_t total,
                               bool check)
    : line_(line), store_(store), total_(total), check_(check), hits0_(store.hits()),
      misses0_(store.misses()), compiles0_(store.compiles()) {
  thread_ = std::thread([this] { watch(); });
}

KernelProgress::~KernelProgress() {
  if (thread_.joinable())
    finish();
}

std::string KernelProgress::text() const {
  const uint64_t hits = store_.hits() - hits0_, compiles = store_.compiles() - compiles0_;
  if (check_) {
    const uint64_t misses = store_.misses() - misses0_;
    return "  [" + std::to_string(std::min<uint64_t>(hits + misses, total_)) + "/" +
           std::to_string(total_) + "] kernels checked: " + std::to_string(hits) +
           " in the cache, " + std::to_string(misses) + " missing";
  }
  // A miss is counted when the look-up fails, before the compile: a kernel
  // is done when it was found (hit) or compiled.
  return "  [" + std::to_string(std::min<uint64_t>(hits + compiles, total_)) + "/" +
         std::to_string(total_) + "] kernels ready: " + std::to_string(compiles) + " compiled, " +
         std::to_string(hits) + " from the cache";
}

void KernelProgress::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    const std::string now = text();
    if (now != last_) {
      line_.update(now);
      last_ = now;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; });
  }
}

void KernelProgress::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  const std::string now = text();
  if (now != last_)
    line_.update(now);
  line_.clear();
}

} // namespace moejit::cli
