#include "runtime/dtypes.h"

#include <string>

#include "runtime/errors.h"

namespace aotirt {

static_assert(kNumDtypes <= 127, "a row of the index is an int8_t");

aotirt_status check_dtype(int32_t code) {
  if (dtype_info(code)) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_TYPE, "dtype code " + std::to_string(code) + " is not supported");
}

int32_t dtype_from_dlpack(DLDataType dtype) {
  if (dtype.lanes != 1) return -1;
  for (const DtypeInfo& d : kDtypes)
    if (d.dlpack_code == dtype.code && d.itemsize * 8 == dtype.bits) return d.code;
  return -1;
}

DLDataType dtype_to_dlpack(int32_t code) {
  DLDataType r{};
  r.lanes = 1;
  if (const DtypeInfo* d = dtype_info(code)) {
    r.code = d->dlpack_code;
    r.bits = static_cast<uint8_t>(d->itemsize * 8);
  }
  return r;
}

}  // namespace aotirt
