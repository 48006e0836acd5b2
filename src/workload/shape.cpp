#include "workload/shape.h"

#include "common/error.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SHA256.h>

namespace moejit {
namespace workload {

llvm::Error validateShape(const MoeShape &s) {
  if (s.dtype != DType::BF16 && s.dtype != DType::FP16 && s.dtype != DType::FP32)
    return makeError(ErrorCode::InvalidShape, "invalid shape: unknown dtype {}",
                     static_cast<int>(s.dtype));
  if (s.experts < 1 || s.experts > kMaxExperts)
    return makeError(ErrorCode::InvalidShape, "invalid shape: experts = {} must be in 1..{}",
                     s.experts, kMaxExperts);
  if (s.k < 1 || s.k > kMaxK)
    return makeError(ErrorCode::InvalidShape, "invalid shape: k = {} must be in 1..{}", s.k, kMaxK);
  for (auto [name, value] :
       {std::pair{"hidden", s.hidden}, std::pair{"intermediate", s.intermediate}}) {
    if (value < 8 || value % 8 != 0 || value > kMaxDim)
      return makeError(ErrorCode::InvalidShape,
                       "invalid shape: {} = {} must be a positive multiple of "
                       "8 and at most {}",
                       name, value, kMaxDim);
  }
  return llvm::Error::success();
}

std::string canonicalText(const MoeShape &s) {
  return fmt::format("moejit-workload v{} k={} hidden={} intermediate={} "
                     "experts={} dtype={}",
                     kFormatVersion, s.k, s.hidden, s.intermediate, s.experts, dtype_name(s.dtype));
}

std::string sha256Hex(llvm::StringRef text) {
  auto digest = llvm::SHA256::hash(llvm::arrayRefFromStringRef(text));
  return llvm::toHex(llvm::ArrayRef<uint8_t>(digest), /*LowerCase=*/true);
}

std::string workloadId(const MoeShape &s) { return sha256Hex(canonicalText(s)); }

} // namespace workload

void validate(const MoeShape &shape) { throwIfError(workload::validateShape(shape)); }
std::string canonical_text(const MoeShape &shape) { return workload::canonicalText(shape); }
std::string workload_id(const MoeShape &shape) { return workload::workloadId(shape); }

const char *dtype_name(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return "bf16";
  case DType::FP16:
    return "fp16";
  case DType::FP32:
    return "fp32";
  }
  return "unknown";
}

int dtype_bytes(DType dtype) { return dtype == DType::FP32 ? 4 : 2; }

DType parse_dtype(const std::string &name) {
  for (DType d : {DType::BF16, DType::FP16, DType::FP32})
    if (name == dtype_name(d))
      return d;
  throw Error(ErrorCode::InvalidShape,
              "unknown dtype '" + name + "' (expected bf16, fp16 or fp32)");
}

} // namespace moejit
