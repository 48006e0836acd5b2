// A compile target, parsed once from its name ("sm_90a") into the facts the
// planner, the tuner's candidates and the builder ask about, instead of
// comparing names in each of them.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Error.h>

#include <string>

namespace moejit {

class Arch {
public:
  /// Strict spelling: "sm_", a number from 80 without a leading zero (at
  /// most four digits), and "a" (architecture-specific features) only from
  /// sm_90 on. Which targets this NVRTC compiles for is nvrtc::checkArch's.
  static llvm::Expected<Arch> parse(llvm::StringRef name);
  /// A name known to be well spelt (literals in code and tests): throws
  /// moejit::Error(InvalidArgument) otherwise.
  Arch(const char *name); // NOLINT(google-explicit-constructor): literals read as targets

  const std::string &name() const { return name_; }
  int number() const { return number_; } ///< 80, 86, 90, ...
  /// wgmma (warpgroup MMA from shared memory) exists only with sm_90a's
  /// architecture-specific features: the Hopper kernels need it.
  bool hasWgmma() const { return number_ == 90 && specific_; }

  bool operator==(const Arch &o) const { return name_ == o.name_; }
  bool operator!=(const Arch &o) const { return !(*this == o); }

private:
  Arch(std::string name, int number, bool specific)
      : name_(std::move(name)), number_(number), specific_(specific) {}
  std::string name_;
  int number_ = 0;
  bool specific_ = false;
};

} // namespace moejit
