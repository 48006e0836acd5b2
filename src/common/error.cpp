#include "common/error.h"

namespace moejit {

char MoeErrorInfo::ID = 0;

void throwError(llvm::Error error) {
  ErrorCode code = ErrorCode::Internal;
  std::string message;
  llvm::handleAllErrors(
      std::move(error),
      [&](const MoeErrorInfo &info) {
        code = info.code();
        message = info.message();
      },
      [&](const llvm::ErrorInfoBase &info) { message = info.message(); });
  throw Error(code, message);
}

std::string errorMessage(llvm::Error error) { return llvm::toString(std::move(error)); }

} // namespace moejit
