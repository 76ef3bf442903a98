// The one table of dtypes: every code aotirt has tensors of (the aotirt_dtype
// enum of include/aotirt/aotirt.h), with its name, element size, kind and
// DLPack type code. Every C++ file asks it instead of spelling codes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aotirt/aotirt.h"
#include "aotirt/dlpack.h"

namespace aotirt {

struct DtypeInfo {
  int32_t code;         // aotirt_dtype (c10's ScalarType)
  const char* name;     // as numpy spells it, and torch without "torch."
  size_t itemsize;      // bytes per element
  int kind;             // aotirt_dtype_kind
  uint8_t dlpack_code;  // DLDataTypeCode of the same elements (bits: itemsize * 8)
};

// DLPack 1.1's codes of the float8 formats (the vendored dlpack.h is 1.0,
// which has none): a consumer of 1.0 refuses them instead of misreading the
// bytes as integers.
inline constexpr uint8_t kDLFloat8E4m3fnCode = 10;
inline constexpr uint8_t kDLFloat8E5m2Code = 12;

// In increasing order of code. The float8 formats are storage and GEMM
// operands (_scaled_mm): tensors of them are made, copied byte for byte and
// viewed, while elementwise shims refuse them by dtype.
inline constexpr DtypeInfo kDtypes[] = {
    {AOTIRT_DTYPE_UINT8, "uint8", 1, AOTIRT_DTYPE_KIND_UNSIGNED, kDLUInt},
    {AOTIRT_DTYPE_INT8, "int8", 1, AOTIRT_DTYPE_KIND_SIGNED, kDLInt},
    {AOTIRT_DTYPE_INT16, "int16", 2, AOTIRT_DTYPE_KIND_SIGNED, kDLInt},
    {AOTIRT_DTYPE_INT32, "int32", 4, AOTIRT_DTYPE_KIND_SIGNED, kDLInt},
    {AOTIRT_DTYPE_INT64, "int64", 8, AOTIRT_DTYPE_KIND_SIGNED, kDLInt},
    {AOTIRT_DTYPE_FLOAT16, "float16", 2, AOTIRT_DTYPE_KIND_FLOATING, kDLFloat},
    {AOTIRT_DTYPE_FLOAT32, "float32", 4, AOTIRT_DTYPE_KIND_FLOATING, kDLFloat},
    {AOTIRT_DTYPE_FLOAT64, "float64", 8, AOTIRT_DTYPE_KIND_FLOATING, kDLFloat},
    {AOTIRT_DTYPE_BOOL, "bool", 1, AOTIRT_DTYPE_KIND_BOOL, kDLBool},
    {AOTIRT_DTYPE_BFLOAT16, "bfloat16", 2, AOTIRT_DTYPE_KIND_FLOATING, kDLBfloat},
    {AOTIRT_DTYPE_FLOAT8_E5M2, "float8_e5m2", 1, AOTIRT_DTYPE_KIND_FLOATING, kDLFloat8E5m2Code},
    {AOTIRT_DTYPE_FLOAT8_E4M3FN, "float8_e4m3fn", 1, AOTIRT_DTYPE_KIND_FLOATING, kDLFloat8E4m3fnCode},
};
inline constexpr size_t kNumDtypes = sizeof(kDtypes) / sizeof(kDtypes[0]);

namespace detail {
// Row of each code below kCodes in kDtypes, -1 for none: lookups are one load.
inline constexpr int32_t kCodes = 32;
struct DtypeIndex {
  int8_t row[kCodes];
};
constexpr DtypeIndex make_dtype_index() {
  DtypeIndex index{};
  for (int32_t c = 0; c < kCodes; ++c) index.row[c] = -1;
  for (size_t i = 0; i < kNumDtypes; ++i) index.row[kDtypes[i].code] = static_cast<int8_t>(i);
  return index;
}
inline constexpr DtypeIndex kDtypeIndex = make_dtype_index();
}  // namespace detail

// The row of `code`, or nullptr when aotirt has no tensors of it.
inline const DtypeInfo* dtype_info(int32_t code) {
  if (code < 0 || code >= detail::kCodes) return nullptr;
  const int8_t row = detail::kDtypeIndex.row[code];
  return row < 0 ? nullptr : &kDtypes[row];
}

inline size_t dtype_itemsize(int32_t code) {  // 0 for unsupported codes
  const DtypeInfo* d = dtype_info(code);
  return d ? d->itemsize : 0;
}
inline const char* dtype_name(int32_t code) {  // "unsupported" for unsupported codes
  const DtypeInfo* d = dtype_info(code);
  return d ? d->name : "unsupported";
}
inline int dtype_kind(int32_t code) {
  const DtypeInfo* d = dtype_info(code);
  return d ? d->kind : AOTIRT_DTYPE_KIND_NONE;
}
inline bool is_floating(int32_t code) { return dtype_kind(code) == AOTIRT_DTYPE_KIND_FLOATING; }

// AOTIRT_ERROR_TYPE "dtype code N is not supported" unless aotirt has `code`.
aotirt_status check_dtype(int32_t code);

// The code of a DLPack dtype, or -1 when aotirt has no such dtype.
int32_t dtype_from_dlpack(DLDataType dtype);
// The DLPack dtype of a code aotirt has.
DLDataType dtype_to_dlpack(int32_t code);

}  // namespace aotirt
