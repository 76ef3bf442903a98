// What a handle checks about a model library beyond its symbols: how large
// a weights blob it reads (the library's own figures, asked once when its
// container exists), and what its generated input checks mean when they
// refuse a run (torch's message, said again naming the input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/container_api.h"
#include "runtime/tensor.h"

namespace aotirt {

// What a library says, once its container exists, about the weights blob it
// reads in AOTInductorModelUpdateConstantsFromBlob (whose C signature carries
// no size, so the blob is checked against this before the call).
struct WeightsFacts {
  enum class Size {
    Unknown,   // nothing said: a sized blob goes through unchecked, an unsized one is refused
    Exact,     // GetConstantsBlobSize: the blob is exactly `bytes`
    AtLeast,   // the sum of GetConstantDataSize over the non-folded constants: it reads that much
  };
  Size size = Size::Unknown;
  uint64_t bytes = 0;
  // Why the library reads no blob at all (torch compiles the weights into the
  // library unless they are written beside it: then its GetConstantsBlobSize
  // fails, and UpdateConstantsFromBlob does nothing); empty when it reads one.
  std::string ignores_blob;
  // A run needs weights that are not loaded yet (torch: weights kept in a
  // separate blob, its constants missing until the blob is loaded; a run
  // without them dereferences null constants).
  bool missing = false;
  size_t constants = 0;  // non-folded constants, for messages
};

// Asks the library (its container `container`, opened from `library`).
WeightsFacts inspect_weights(const ContainerApi& api, void* library, AOTInductorModelContainerHandle container);

// A blob of `nbytes` (`sized` false: the size is not known) checked against
// `facts` before the library reads it through a bare pointer.
aotirt_status check_weights_blob(const WeightsFacts& facts, const std::string& path, size_t nbytes, bool sized);

// The error of a run before the weights that the library keeps in a
// separate blob are loaded (its constants would be null).
aotirt_status weights_missing(const WeightsFacts& facts, const std::string& path);

// torch's generated libraries check each input against what they were
// compiled for when AOTI_RUNTIME_CHECK_INPUTS is set: set it (unless the user
// did) before the first library opens.
void enable_generated_input_checks();

// "float32 [2, 3] (strides [3, 1]) on cuda:0".
std::string describe_input(const Tensor& t);

// The reason a refused run gives, translated: "input <i> (<name>) does not
// match what the model was compiled for: ..." with `kind` the status to
// raise; false when `reason` is not one of the library's input checks.
// `names`: the inputs' names, empty (or shorter) where the library has none.
bool input_check_failure(const std::string& reason, Tensor* const* inputs, size_t n,
                         const std::vector<std::string>& names, std::string* message, aotirt_status* kind);

// For libraries of torch < 2.12 (no AOTInductorGetLastError): a run refused
// before it took any input failed in its input checks, whose reason went to
// stderr only; says so, with what each input is.
std::string inputs_refused_silently(const std::string& path, const char* call, Tensor* const* inputs, size_t n,
                                    const std::vector<std::string>& names);

}  // namespace aotirt
