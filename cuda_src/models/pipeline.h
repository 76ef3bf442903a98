// What the encoder and decoder example models share: their sizes and their
// input checks.
//
// The two models are a speech-style pipeline: the encoder runs once per
// utterance, the decoder once per output token (greedy), its next_token
// output feeding its next step's token input on the device.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "constant_buffers.h"
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

// The weights' float32 values: model::constant_specs() lists them (each
// model file defines it), and the container holds them (constant_buffers.h).

// Fails unless input `index` has `dtype` and `shape` and is contiguous; the
// message names the input and says what `model_name` takes. It runs on every
// decoder step: the messages are built only on failure.
void check_input(const model::Tensor& t, size_t index, const char* model_name, int32_t dtype,
                 std::initializer_list<int64_t> shape);

// Fails, naming the kernel, when a kernel returned an error.
void check_kernel(int status, const char* kernel);

}  // namespace pipeline
