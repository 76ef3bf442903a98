// Host-only check of cuda_src/shims/libs/cudnn_knobs.h (knob types between
// cuDNN's plan names and cudnn-frontend's calls), built against the real
// cuDNN and cudnn-frontend headers and run by tests/shims/test_cudnn_knobs.py.
// It calls only the frontend's header-only converters: no GPU, and cuDNN's
// library is never opened. Prints "N failures".

#include <cstdio>
#include <string>
#include <unordered_map>

#include "host_check.h"
#include "shims/libs/cudnn_knobs.h"

// The handle NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING resolves cuDNN through
// (libaotirt's cudnn.cpp defines it); nothing here opens cuDNN.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace aotirt {
// The debug log cudnn_tuning.cpp writes to (the library defines it): printed here.
void debug_log(const std::string& line) { std::fprintf(stderr, "log: %s\n", line.c_str()); }
}  // namespace aotirt

namespace {

namespace fe = cudnn_frontend;
using aotirt::cudnn::tuning::EngineConfig;
namespace knobs = aotirt::cudnn::knobs;
namespace tuning = aotirt::cudnn::tuning;

using host_check::expect;

}  // namespace

int main() {
  // A name the H200's heuristics gave a float32 3x3 convolution (session
  // 18): its knobs are backend types (13 TILEK, 18 IDX_MODE, 25 WORKSPACE,
  // 27 TILE_CGA_M, 28 TILE_CGA_N), not the frontend's numbers.
  EngineConfig config;
  expect(tuning::parse_tag("eng67_k2=8_k13=0_k18=0_k25=1_k27=1_k28=1", &config), "the tag parses");
  std::unordered_map<fe::KnobType_t, int64_t> got;
  expect(knobs::frontend_knobs(config, &got), "every knob of the tag has a frontend type");
  const std::unordered_map<fe::KnobType_t, int64_t> want = {
      {fe::KnobType_t::TILE_SIZE, 8}, {fe::KnobType_t::TILEK, 0},      {fe::KnobType_t::IDX_MODE, 0},
      {fe::KnobType_t::WORKSPACE, 1}, {fe::KnobType_t::TILE_CGA_M, 1}, {fe::KnobType_t::TILE_CGA_N, 1}};
  expect(got == want, "the tag's knobs as the frontend's types");

  // The ranges the frontend lists come back as the tag's numbers.
  int64_t backend = -1;
  expect(knobs::to_backend(fe::KnobType_t::TILEK, &backend) && backend == CUDNN_KNOB_TYPE_TILEK && backend == 13,
         "the frontend's TILEK is the tag's k13");
  expect(knobs::to_backend(fe::KnobType_t::SPLIT_K_SLC, &backend) && backend == CUDNN_KNOB_TYPE_SPLIT_K_SLC,
         "SPLIT_K_SLC");
  expect(!knobs::to_backend(fe::KnobType_t::SPLIT_KV, &backend), "a frontend-only knob has no backend type");

  // Every backend type the frontend knows goes there and back unchanged.
  int mapped = 0;
  for (int64_t type = 0; type < static_cast<int64_t>(CUDNN_KNOB_TYPE_COUNTS); ++type) {
    fe::KnobType_t frontend_type = fe::KnobType_t::NOT_SET;
    if (!knobs::to_frontend(type, &frontend_type)) continue;
    ++mapped;
    int64_t back = -1;
    expect(knobs::to_backend(frontend_type, &back) && back == type, "round trip of backend type " + std::to_string(type));
  }
  expect(mapped >= 25, "most backend types map (" + std::to_string(mapped) + ")");

  // Types with no frontend word: a configuration naming one is not built.
  fe::KnobType_t unused = fe::KnobType_t::NOT_SET;
  expect(!knobs::to_frontend(-1, &unused) && !knobs::to_frontend(CUDNN_KNOB_TYPE_COUNTS, &unused),
         "out of range");
  expect(!knobs::to_frontend(CUDNN_KNOB_TYPE_COUNTS + 1000, &unused), "far out of range");
  EngineConfig deprecated;
  expect(tuning::parse_tag("eng3_k0=2", &deprecated) && !knobs::frontend_knobs(deprecated, &got),
         "the deprecated SPLIT_K (k0) is refused");

  return host_check::finish();
}
