// What the encoder and decoder example models share: their sizes, the
// container state that holds their weights, and their input checks.
//
// The two models are a speech-style pipeline: the encoder runs once per
// utterance, the decoder once per output token (greedy), its next_token
// output feeding its next step's token input on the device.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "container.h"

namespace pipeline {

// Sizes. make_weights.py and aotirt/_layout.py repeat them (a test checks
// that all three agree).
constexpr int64_t kT = 64;    // frames per utterance
constexpr int64_t kF = 80;    // features per frame
constexpr int64_t kD = 256;   // model width
constexpr int64_t kH = 512;   // width of the decoder's MLP
constexpr int64_t kV = 1024;  // vocabulary
constexpr float kLayerNormEps = 1e-5f;

// One tensor of a weights file. A file is its tensors' float32 values,
// little-endian and row-major, concatenated in the model's layout order.
struct WeightSpec {
  const char* name;
  std::vector<int64_t> shape;
};
using Layout = std::vector<WeightSpec>;

// A container's weights: one float32 tensor on the container's device that
// holds the whole blob, and where each weight starts in it. The starts are
// kept as pointers, found once here: a lookup then costs no shim call (runs
// look weights up on every decoder step), and the storage never moves.
class Weights : public model::State {
 public:
  Weights(model::Tensor storage, const std::vector<int64_t>& offsets) : storage_(std::move(storage)) {
    const float* base = static_cast<const float*>(storage_.data());
    weights_.reserve(offsets.size());
    for (int64_t offset : offsets) weights_.push_back(base + offset);
  }
  // Weight `i` of the layout it was loaded with.
  const float* operator[](size_t i) const { return weights_.at(i); }

 private:
  model::Tensor storage_;
  std::vector<const float*> weights_;
};

// The model's weights, in file order: each model file defines it. The
// shared model::update_constants (pipeline.cpp) loads a blob with it.
const Layout& layout();

// Copies a blob laid out as `layout` into new Weights on `device`. For CUDA
// that is one cudaMemcpyAsync on the current stream: the blob is pageable
// host memory, which CUDA has consumed when the call returns, and nothing
// waits for the GPU.
std::unique_ptr<model::State> load_weights(const model::Device& device, const Layout& layout,
                                           const uint8_t* blob);

// The weights a run uses; fails when none were loaded.
const Weights& loaded_weights(const model::State* state);

// Fails unless input `index` has `dtype` and `shape` and is contiguous; the
// message names the input and says what `model_name` takes. It runs on every
// decoder step: the messages are built only on failure.
void check_input(const model::Tensor& t, size_t index, const char* model_name, int32_t dtype,
                 std::initializer_list<int64_t> shape);

// Fails, naming the kernel, when a kernel returned an error.
void check_kernel(int status, const char* kernel);

}  // namespace pipeline
