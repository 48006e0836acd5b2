#include "common/arch.h"

#include "common/error.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

namespace moejit {

llvm::Expected<Arch> Arch::parse(llvm::StringRef name) {
  llvm::StringRef rest = name;
  bool ok = rest.consume_front("sm_");
  const bool specific = ok && rest.consume_back("a");
  unsigned number = 0;
  ok = ok && !rest.empty() && rest.size() <= 4 && rest.front() != '0' &&
       llvm::all_of(rest, [](char c) { return llvm::isDigit(c); }) &&
       !rest.getAsInteger(10, number);
  ok = ok && number >= 80 && (!specific || number >= 90);
  if (!ok)
    return makeError(ErrorCode::InvalidArgument,
                     "unsupported target '{}': expected sm_ and a number from 80 (sm_80, sm_86, "
                     "sm_90, ...), with the a suffix only from sm_90 on",
                     name);
  return Arch(name.str(), static_cast<int>(number), specific);
}

Arch::Arch(const char *name) {
  llvm::Expected<Arch> parsed = parse(name);
  throwIfError(parsed.takeError());
  *this = std::move(*parsed);
}

} // namespace moejit
