// The C API of include/aotirt/aotirt.h: a model's constants by name.
// Argument checks and conversions only; the work is done in constants.cpp.

#include <string>

#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/handle.h"

using namespace aotirt;

extern "C" {

AOTIRT_API size_t aotirt_handle_num_constants(const aotirt_handle* h) {
  AOTIRT_ENTRY();
  return h->constants().size();
}

AOTIRT_API aotirt_status aotirt_handle_constant_info(const aotirt_handle* h, size_t i, aotirt_constant_info* out) {
  AOTIRT_ENTRY();
  if (!out) return fail(AOTIRT_ERROR_VALUE, "out must not be NULL");
  const ConstantTable& table = h->constants();
  if (i >= table.size())
    return fail(AOTIRT_ERROR_VALUE, "constant " + std::to_string(i) + " is out of range: " + h->path() + " has " +
                                        std::to_string(table.size()));
  const ConstantInfo& info = table.at(i);
  out->name = info.name.c_str();
  out->fqn = info.fqn.c_str();
  out->dtype = info.dtype;
  out->kind = info.kind;
  out->nbytes = info.bytes;
  out->from_folded = info.folded;
  out->ndim = info.shape_known ? static_cast<int64_t>(info.sizes.size()) : -1;
  out->sizes = info.sizes.data();
  out->aotirt_owned = table.active_value(i) != nullptr;
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_handle_update_constants(aotirt_handle* h, const char* const* keys,
                                                        aotirt_tensor* const* values, const int* share, size_t n,
                                                        int inactive) {
  AOTIRT_ENTRY();
  if (n && (!keys || !values)) return fail(AOTIRT_ERROR_VALUE, "keys and values must not be NULL");
  return h->update_constants(keys, values, share, n, inactive != 0);
}

AOTIRT_API aotirt_status aotirt_handle_swap_constants(aotirt_handle* h) {
  AOTIRT_ENTRY();
  return h->swap_constants();
}

AOTIRT_API aotirt_status aotirt_handle_constant_value(aotirt_handle* h, size_t i, aotirt_tensor** out) {
  AOTIRT_ENTRY();
  if (!out) return fail(AOTIRT_ERROR_VALUE, "out must not be NULL");
  return h->constant_value(i, out);
}

}  // extern "C"
