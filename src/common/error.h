// Errors as values inside the library: llvm::Expected / llvm::Error carrying
// a moejit::ErrorCode. The public API converts them to moejit::Error.
#pragma once

#include "moejit/moejit.hpp"

#include <llvm/Support/Error.h>
#include <spdlog/fmt/fmt.h>

namespace moejit {

class MoeErrorInfo : public llvm::ErrorInfo<MoeErrorInfo> {
public:
  static char ID;
  MoeErrorInfo(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }
  ErrorCode code() const { return code_; }
  std::string message() const override { return message_; }

private:
  ErrorCode code_;
  std::string message_;
};

template <typename... Args>
llvm::Error makeError(ErrorCode code, fmt::format_string<Args...> format, Args &&...args) {
  return llvm::make_error<MoeErrorInfo>(code, fmt::format(format, std::forward<Args>(args)...));
}

/// Throws the error as moejit::Error (public API boundary only).
[[noreturn]] void throwError(llvm::Error error);

template <typename T> T unwrapOrThrow(llvm::Expected<T> value) {
  if (!value)
    throwError(value.takeError());
  return std::move(*value);
}

inline void throwIfError(llvm::Error error) {
  if (error)
    throwError(std::move(error));
}

/// Message text of an error, consuming it.
std::string errorMessage(llvm::Error error);

} // namespace moejit
