#include "runtime/model_checks.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "runtime/dtypes.h"
#include "runtime/errors.h"

namespace aotirt {
namespace {

// " (<name>)" for input `i`, or nothing when the library names none.
std::string named(const std::vector<std::string>& names, size_t i) {
  return i < names.size() && !names[i].empty() ? " (" + names[i] + ")" : "";
}

}  // namespace

// torch's generated libraries check each input against what they were
// compiled for (dtype, every static size, the bounds of dynamic sizes, the
// strides, the device) before they take it, when AOTI_RUNTIME_CHECK_INPUTS
// is set (read once, at a library's first run). aotirt sets it before the
// first library opens, unless the user set it (AOTI_RUNTIME_CHECK_INPUTS=0
// turns the checks off). Nothing else a library exports records its inputs;
// a first run's shapes are no rule for a model with dynamic sizes.
void enable_generated_input_checks() {
  static std::once_flag once;
  std::call_once(once, [] { setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0); });
}

std::string describe_input(const Tensor& t) {
  std::string strides = "[";
  for (int64_t d = 0; d < t.ndim; ++d) strides += (d ? ", " : "") + std::to_string(t.strides[d]);
  return dtype_and_shape(t) + " (strides " + strides + "]) on " + device_text(t);
}

// A failure of those checks reads "input_handles[<i>]: <what>", with dtypes
// as c10 codes: said again naming the input, with what it is.
bool input_check_failure(const std::string& reason, Tensor* const* inputs, size_t n,
                         const std::vector<std::string>& names, std::string* message, aotirt_status* kind) {
  static const std::string prefix = "input_handles[";
  if (reason.compare(0, prefix.size(), prefix) != 0) return false;
  size_t close = reason.find("]: ", prefix.size());
  if (close == std::string::npos) return false;
  size_t index = 0;
  for (size_t k = prefix.size(); k < close; ++k) {
    if (reason[k] < '0' || reason[k] > '9') return false;
    index = index * 10 + static_cast<size_t>(reason[k] - '0');
    if (index >= n) return false;
  }
  std::string what = reason.substr(close + 3);
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  const bool dtype = what.rfind("unmatched dtype", 0) == 0;
  if (dtype) {
    // "unmatched dtype, expected: 6(at::kFloat), but got: 7"
    size_t e = what.find("expected: "), g = what.find("but got: ");
    if (e != std::string::npos && g != std::string::npos) {
      int expected = std::atoi(what.c_str() + e + 10), got = std::atoi(what.c_str() + g + 9);
      what = std::string("unmatched dtype: the model takes ") + dtype_name(expected) + ", got " + dtype_name(got);
    }
  }
  // A size or stride checked past the input's last dimension: its rank is off
  // (the check reads sizes the input does not have).
  size_t at = what.find(" at ");
  if (!dtype && at != std::string::npos && std::atoi(what.c_str() + at + 4) >= inputs[index]->ndim)
    what = "it has " + std::to_string(inputs[index]->ndim) + " dimension(s), fewer than the model's (" + what + ")";
  *message = "input " + std::to_string(index) + named(names, index) +
             " does not match what the model was compiled for: " + what + "; the input is " +
             describe_input(*inputs[index]) + " (the library's own input check)";
  *kind = dtype ? AOTIRT_ERROR_TYPE : AOTIRT_ERROR_VALUE;
  return true;
}

std::string inputs_refused_silently(const std::string& path, const char* call, Tensor* const* inputs, size_t n,
                                    const std::vector<std::string>& names) {
  std::string given;
  for (size_t i = 0; i < n; ++i)
    given += (i ? "; input " : "input ") + std::to_string(i) + named(names, i) + " is " + describe_input(*inputs[i]);
  return path + ": " + call + " refused its inputs before taking them: the library's own input check "
         "(what the model was compiled for) failed; this library (torch < 2.12) has no "
         "AOTInductorGetLastError, so its reason (\"input_handles[<i>]: ...\") was printed to stderr only; " + given;
}

WeightsFacts inspect_weights(const ContainerApi& api_, void* library_, AOTInductorModelContainerHandle container_) {
  WeightsFacts facts;
  // The constants a blob would hold: all but those constant folding makes.
  size_t count = 0;
  uint64_t data_bytes = 0;
  bool data_sizes_known = api_.num_constants && api_.constant_data_size;
  if (api_.num_constants && api_.num_constants(container_, &count) == 0) {
    for (size_t i = 0; i < count; ++i) {
      bool folded = false;
      if (api_.constant_from_folded && api_.constant_from_folded(container_, i, &folded) == 0 && folded) continue;
      ++facts.constants;
      size_t bytes = 0;
      if (data_sizes_known && api_.constant_data_size(container_, i, &bytes) == 0)
        data_bytes += bytes;
      else
        data_sizes_known = false;
    }
  } else {
    data_sizes_known = false;
  }
  // Loaded already, or still to load? Only the container's constant map says
  // (torch's libraries export it). Asked first: GetConstantsBlobSize throws
  // for weights compiled into the library, and torch prints every exception
  // it turns into an error code.
  const AOTInductorConstantMapEntry* entries = nullptr;
  size_t loaded = 0;
  if (api_.extract_constants && api_.num_constants && facts.ignores_blob.empty()) {
    if (facts.constants == 0) {
      facts.ignores_blob = "it has no constants";
    } else if (api_.extract_constants(container_, &entries, &loaded, false) == 0) {
      if (loaded < facts.constants)
        facts.missing = true;
      else
        // Compiled in, or mapped from the library file itself (mmap'd weights):
        // torch's UpdateConstantsFromBlob then reads nothing.
        facts.ignores_blob = "its weights are compiled into the library, loaded when it opens";
    }
  }
  // Libraries of torch < 2.12 export no ExtractConstantsMapEntries (nor
  // AOTInductorGetLastError), and their GetConstantsBlobSize prints an error
  // for weights compiled in. What they do export is the constants section
  // torch embeds, _binary_constants_bin_start/_end: the weights themselves
  // (compiled in), 16 bytes (mmap'd from the library file itself) or exactly
  // 8 bytes, the blob's size, when the weights are written beside the library
  // (package_constants_on_disk_format="binary_blob"): then its constants stay
  // missing until a blob is loaded, and a run before dereferences them.
  bool ask_blob_size = true;
  if (!api_.extract_constants && api_.num_constants && facts.ignores_blob.empty()) {
    const auto* start = static_cast<const uint8_t*>(dlsym(library_, "_binary_constants_bin_start"));
    const auto* end = static_cast<const uint8_t*>(dlsym(library_, "_binary_constants_bin_end"));
    if (facts.constants == 0) {
      facts.ignores_blob = "it has no constants";
    } else if (start && end && end >= start) {
      uint64_t placeholder = 0;
      if (end - start == 8) std::memcpy(&placeholder, start, 8);
      // The placeholder holds the blob's size, at least the constants' bytes:
      // compiled-in weights of exactly 8 bytes hold anything else.
      if (end - start == 8 && (!data_sizes_known || placeholder >= data_bytes)) {
        facts.missing = true;
      } else {
        ask_blob_size = false;
        facts.ignores_blob = end - start == 16 ? "its weights are mapped from the library file itself, loaded when "
                                                 "it opens"
                                               : "its weights are compiled into the library, loaded when it opens";
      }
    }
  }
  if (api_.constants_blob_size && facts.ignores_blob.empty() && ask_blob_size) {
    uint64_t bytes = 0;
    if (api_.constants_blob_size(container_, &bytes) == 0) {
      facts.size = WeightsFacts::Size::Exact;
      facts.bytes = bytes;
    } else {
      const char* why = nullptr;
      std::string reason = api_.last_error && api_.last_error(&why) == 0 && why && *why ? why : "no reason given";
      facts.ignores_blob = "its weights are compiled into the library (AOTInductorModelContainerGetConstantsBlobSize "
                           "says: " + reason + ")";
    }
  }
  if (facts.size == WeightsFacts::Size::Unknown && facts.ignores_blob.empty() && data_sizes_known) {
    facts.size = WeightsFacts::Size::AtLeast;
    facts.bytes = data_bytes;
  }
  clear_error();
  return facts;
}

aotirt_status check_weights_blob(const WeightsFacts& facts, const std::string& path, size_t nbytes, bool sized) {
  // The library reads as many bytes as it expects, from a bare pointer: a
  // short blob would be read past its end.
  if (!facts.ignores_blob.empty())
    return fail(AOTIRT_ERROR_AOTI, path + " reads no weights blob: " + facts.ignores_blob +
                                       "; AOTInductorModelUpdateConstantsFromBlob would ignore it");
  const std::string got = std::to_string(nbytes);
  const std::string want = std::to_string(facts.bytes);
  switch (facts.size) {
    case WeightsFacts::Size::Exact:
      if (sized && nbytes != facts.bytes)
        return fail(AOTIRT_ERROR_VALUE, "the weights blob has " + got + " bytes, " + path + " reads exactly " + want +
                                            " (AOTInductorModelContainerGetConstantsBlobSize): a truncated file, "
                                            "or another model's weights");
      break;
    case WeightsFacts::Size::AtLeast:
      if (sized && nbytes < facts.bytes)
        return fail(AOTIRT_ERROR_VALUE, "the weights blob has " + got + " bytes, " + path + " reads " + want +
                                            " (the sizes of its " + std::to_string(facts.constants) +
                                            " constants): a truncated file, or another model's weights");
      break;
    case WeightsFacts::Size::Unknown:
      if (!sized)
        return fail(AOTIRT_ERROR_VALUE, path + " does not say how large its weights blob is, and the blob came "
                                               "without a size: nothing could check that the library will not "
                                               "read past its end (pass the size: "
                                               "aotirt_handle_update_constants_from_blob_sized)");
      break;
  }
  return AOTIRT_OK;
}

aotirt_status weights_missing(const WeightsFacts& facts, const std::string& path) {
  return fail(AOTIRT_ERROR_AOTI, path + ": weights not loaded: its " + std::to_string(facts.constants) +
                                     " constants are kept in a separate weights blob (" +
                                     std::to_string(facts.bytes) +
                                     " bytes, the *_weights.blob of its .pt2 package): load it with "
                                     "update_constants_from_blob, or open the package with aotirt.load");
}

}  // namespace aotirt
