// add_mul: out = a * b + c, float32, elementwise over inputs of one shape.
#pragma once

#include <cstdint>

// The CUDA build's kernel launch (add_mul_kernel.cu); returns cudaError_t.
int add_mul_cuda(const float* a, const float* b, const float* c, float* out, int64_t n, void* stream);
