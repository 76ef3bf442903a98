// What a model is given for each input of a run.
//
// The model steals (deletes) its input handles, so it gets fresh ones and the
// caller's tensors stay valid: an alias of the input, ordered on the run's
// stream; a private copy of an input over read-only memory; or, for a CUDA
// tensor of another GPU, a copy on the model's device (runtime/transfer.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

// `input` (input `i`) for a model on `device_type`/`device_index` whose run is
// queued on `on` (NULL on the CPU). A CPU tensor for a CUDA model, or a CUDA
// tensor for a CPU model, is refused with a message naming both devices.
aotirt_status model_input(const Tensor& input, size_t i, int32_t device_type, int32_t device_index, Stream* on,
                          Tensor** out);

}  // namespace aotirt
