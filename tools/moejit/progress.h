// Progress of a long warm or tune: on a terminal one live line, rewritten in
// place; otherwise (a pipe, a log file) one line per update, flushed at once
// so that the log shows progress as it happens.
#pragma once

#include "runtime/builder.h"

#include <cstdio>
#include <string>

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

/// Reports each kernel of a warm as it is done, on `line`:
/// "  [12/40] compiled moe_gemm1_... (812 ms)", "cached", "missing" (--check)
/// or "failed".
runtime::KernelDone kernelReporter(ProgressLine &line);

/// "274 ms", or "537 ms, one program of 2 kernels" for a kernel NVRTC
/// compiled with others (the time is the program's).
std::string compileTime(const runtime::BuiltKernel &b);

} // namespace moejit::cli
