#include "progress.h"

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

std::string compileTime(const runtime::BuiltKernel &b) {
  std::string text = std::to_string(static_cast<int>(b.entry.meta.compile_ms)) + " ms";
  if (b.program_kernels > 1)
    text += ", one program of " + std::to_string(b.program_kernels) + " kernels";
  return text;
}

runtime::KernelDone kernelReporter(ProgressLine &line) {
  return [&line](const runtime::BuildResult &r, size_t done, size_t total) {
    const runtime::BuiltKernel &b = r.kernel;
    std::string what;
    if (r.ok() && b.from_cache)
      what = "cached";
    else if (r.ok())
      what = "compiled";
    else if (r.code == ErrorCode::CacheMiss)
      what = "missing";
    else
      what = "failed";
    std::string text = "  [" + std::to_string(done) + "/" + std::to_string(total) + "] " + what +
                       " " + b.spec.name();
    if (r.ok() && !b.from_cache)
      text += " (" + compileTime(b) + ")";
    line.update(text);
  };
}

} // namespace moejit::cli
