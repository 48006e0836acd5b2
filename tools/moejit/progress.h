// Progress of a long warm or tune: on a terminal one live line, rewritten in
// place; otherwise (a pipe, a log file) one line per update, flushed at once
// so that the log shows progress as it happens.
#pragma once

#include "store/cubin_store.h"

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace moejit::cli {

class ProgressLine {
public:
  explicit ProgressLine(std::FILE *stream);
  ~ProgressLine();
  /// Replaces the live line on a terminal; a new line otherwise.
  void update(const std::string &text);
  /// A line that stays (on a terminal, above the live line).
  void note(const std::string &text);
  /// Erases the live line (a terminal) so that what follows starts clean.
  void clear();

private:
  std::FILE *stream_;
  bool live_;
  bool shown_ = false;
};

/// Reports kernels done while api::warmShape builds a shape. warmShape
/// returns only once the whole shape is built, so a thread reads the
/// store's counters (mutex-guarded) every 100 ms and reports each change:
/// "[12/40] kernels ready: 9 compiled, 3 from the cache".
class KernelProgress {
public:
  /// `check`: nothing is compiled, a miss is a kernel done (missing).
  KernelProgress(ProgressLine &line, const store::CubinStore &store, size_t total, bool check);
  ~KernelProgress();
  /// Stops the thread and reports the final count.
  void finish();

private:
  std::string text() const;
  void watch();

  ProgressLine &line_;
  const store::CubinStore &store_;
  const size_t total_;
  const bool check_;
  const uint64_t hits0_, misses0_, compiles0_;
  std::string last_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace moejit::cli
