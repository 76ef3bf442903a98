// The C API of include/aotirt/aotirt.h: model libraries and their handles.
// Argument checks and conversions only; the work is done in handle.cpp and
// elf_check.cpp.

#include <string>
#include <vector>

#include "runtime/auto_graphs.h"
#include "runtime/elf_check.h"
#include "runtime/entry.h"
#include "runtime/errors.h"
#include "runtime/handle.h"
#include "runtime/tensor.h"

using namespace aotirt;

extern "C" {

AOTIRT_API aotirt_status aotirt_library_undefined_symbols(const char* path, const char* prefix, const char** names) {
  AOTIRT_ENTRY();
  if (!path || !prefix) return fail(AOTIRT_ERROR_VALUE, "path and prefix must not be NULL");
  AOTIRT_TRY(check_shared_library(path));
  std::vector<std::string> found;
  AOTIRT_TRY(undefined_symbols(path, prefix, &found));
  thread_local std::string joined;
  joined.clear();
  for (const std::string& name : found) joined += name + "\n";
  *names = joined.c_str();
  return AOTIRT_OK;
}

AOTIRT_API size_t aotirt_shim_count(void) { return kNumShims; }

AOTIRT_API aotirt_status aotirt_shim_at(size_t i, const char** name, const char** family, const char** devices) {
  if (i >= kNumShims)
    return fail(AOTIRT_ERROR_VALUE, "shim " + std::to_string(i) + " is out of range: the table has " +
                                        std::to_string(kNumShims));
  if (name) *name = kShims[i].name;
  if (family) *family = kShims[i].family;
  if (devices) *devices = kShims[i].devices;
  return AOTIRT_OK;
}

AOTIRT_API aotirt_status aotirt_handle_open(const char* path, int32_t device_type, int32_t device_index,
                                            aotirt_stream* stream, aotirt_handle** out) {
  AOTIRT_ENTRY();
  if (!path) return fail(AOTIRT_ERROR_VALUE, "model library path is NULL");
  if (device_type == AOTIRT_DEVICE_CPU) return aotirt_handle::open_cpu(path, out);
  if (device_type == AOTIRT_DEVICE_CUDA) return CudaHandle::open(path, device_index, stream, out);
  return fail(AOTIRT_ERROR_VALUE, "device type " + std::to_string(device_type) + " is not supported (cpu 0, cuda 1)");
}

AOTIRT_API size_t aotirt_handle_num_inputs(const aotirt_handle* h) { AOTIRT_ENTRY(); return h->num_inputs(); }
AOTIRT_API size_t aotirt_handle_num_outputs(const aotirt_handle* h) { AOTIRT_ENTRY(); return h->num_outputs(); }
AOTIRT_API const char* aotirt_handle_input_name(const aotirt_handle* h, size_t i) {
  AOTIRT_ENTRY();
  return h->input_name(i);
}
AOTIRT_API const char* aotirt_handle_output_name(const aotirt_handle* h, size_t i) {
  AOTIRT_ENTRY();
  return h->output_name(i);
}
AOTIRT_API bool aotirt_handle_is_closed(const aotirt_handle* h) { AOTIRT_ENTRY(); return h->closed(); }
AOTIRT_API int32_t aotirt_handle_device_type(const aotirt_handle* h) { AOTIRT_ENTRY(); return h->device_type(); }
AOTIRT_API int32_t aotirt_handle_device_index(const aotirt_handle* h) { AOTIRT_ENTRY(); return h->device_index(); }
AOTIRT_API aotirt_stream* aotirt_handle_stream(const aotirt_handle* h) { AOTIRT_ENTRY(); return h->stream(); }

AOTIRT_API aotirt_status aotirt_handle_run(aotirt_handle* h, aotirt_tensor* const* inputs, size_t num_inputs,
                                           aotirt_tensor** outputs, size_t num_outputs) {
  AOTIRT_ENTRY();
  // The one check automatic graphs (auto_graphs.h) add to the eager path.
  if (AutoGraphs* graphs = h->auto_graphs()) return graphs->run(inputs, num_inputs, outputs, num_outputs);
  return h->run(inputs, num_inputs, outputs, num_outputs);
}

AOTIRT_API aotirt_status aotirt_handle_update_constants_from_blob(aotirt_handle* h, const uint8_t* blob) {
  AOTIRT_ENTRY();
  if (!blob) return fail(AOTIRT_ERROR_VALUE, "the weights blob is NULL");
  return h->update_constants_from_blob(blob, 0, false);
}

AOTIRT_API aotirt_status aotirt_handle_update_constants_from_blob_sized(aotirt_handle* h, const uint8_t* blob,
                                                                      size_t nbytes) {
  AOTIRT_ENTRY();
  if (!blob) return fail(AOTIRT_ERROR_VALUE, "the weights blob is NULL");
  return h->update_constants_from_blob(blob, nbytes, true);
}

AOTIRT_API aotirt_status aotirt_handle_constants_blob_size(const aotirt_handle* h, uint64_t* nbytes, bool* exact) {
  AOTIRT_ENTRY();
  return h->constants_blob_size(nbytes, exact);
}

AOTIRT_API aotirt_status aotirt_handle_close(aotirt_handle* h) {
  AOTIRT_ENTRY();
  // The graphs go first (their device memory with them): they borrow the handle.
  if (AutoGraphs* graphs = h->auto_graphs()) graphs->clear();
  return h->close();
}
AOTIRT_API void aotirt_handle_free(aotirt_handle* h) { AOTIRT_ENTRY(); delete h; }

AOTIRT_API aotirt_status aotirt_handle_set_seed(aotirt_handle* h, uint64_t seed) {
  AOTIRT_ENTRY();
  return h->generator().set_seed(seed);
}

AOTIRT_API aotirt_status aotirt_handle_seed(aotirt_handle* h, uint64_t* seed) {
  AOTIRT_ENTRY();
  return h->generator().seed(seed);
}

AOTIRT_API aotirt_status aotirt_set_default_seed(uint64_t seed) {
  AOTIRT_ENTRY();
  return aotirt::default_generator().set_seed(seed);
}

}  // extern "C"
