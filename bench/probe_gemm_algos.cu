// What cuBLASLt's own list of algorithms offers for the products of the
// cuDNN tuning's im2col alternative, against the one call aotirt makes now
// (cublasGemmEx, CUBLAS_GEMM_DEFAULT): a diagnostic for issue 14's tuning
// target, not a benchmark.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude bench/probe_gemm_algos.cu -o /tmp/probe_gemm_algos \
//     -Lpyx/aotirt -laotirt -Xlinker -rpath,$PWD/pyx/aotirt -cudart shared -ldl
//   /tmp/probe_gemm_algos /path/to/libcublasLt.so.13 /path/to/libcublas.so.13
//
// Session 29 left a question (bench/NOTES-issue14.md): im2col on resnet18's
// 512-channel 7x7 layer took 14.8 us in aotirt where torch.mm of its
// product took 9.9. If cuBLASLt lists an algorithm well under the default's
// time for these shapes, timing that list in the tuning (as cuDNN's engines
// are) is worth building; if the default is already the list's best, the
// time is elsewhere (the gather, the gaps, the scratch).
//
// Each product is resnet18's im2col at 224x224 (the shapes are resnet50's
// 3x3 layers too): rows = images x output pixels, inner = channels x 9,
// cols = output channels; row-major y[rows, cols] = x[rows, inner] w^T, as
// conv_gemm.cpp calls it. GPU time per product from events around a CUDA
// graph of kReplayRuns products, so that no host launch gap is counted.
// cuBLAS and cuBLASLt are opened by dlopen from the paths given, the few
// declarations it needs written here (values from CUDA 13's headers). It
// runs on a stream of aotirt's and reads its events after aotirt's copy
// routine, the project's one host wait, as bench/harness.cu does.

#include <cuda_runtime.h>
#include <dlfcn.h>

#include "aotirt/aotirt.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Status = int;
using LtHandle = void*;
using Desc = void*;
using Layout = void*;
using Pref = void*;
struct Algo {
  uint64_t data[8];
};
struct Heuristic {
  Algo algo;
  size_t workspace;
  Status state;
  float waves;
  int reserved[4];
};

constexpr int kOpN = 0, kOpT = 1;
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77;
constexpr int kDescTransA = 3, kDescTransB = 4, kPrefMaxWorkspace = 1;
constexpr int kGemmDefault = -1;
constexpr size_t kWorkspaceBytes = 32u << 20;  // torch's on Hopper, and aotirt's (cublas_workspace.h)
constexpr int kReplayRuns = 50, kReplays = 7, kRequested = 32;

struct Lt {
  Status (*create)(LtHandle*);
  Status (*desc_create)(Desc*, int, cudaDataType_t);
  Status (*desc_set)(Desc, int, const void*, size_t);
  Status (*layout_create)(Layout*, cudaDataType_t, uint64_t, uint64_t, int64_t);
  Status (*pref_create)(Pref*);
  Status (*desc_destroy)(Desc);
  Status (*layout_destroy)(Layout);
  Status (*pref_destroy)(Pref);
  Status (*pref_set)(Pref, int, const void*, size_t);
  Status (*heuristic)(LtHandle, Desc, Layout, Layout, Layout, Layout, Pref, int, Heuristic*, int*);
  Status (*matmul)(LtHandle, Desc, const void*, const void*, Layout, const void*, Layout, const void*, const void*,
                   Layout, void*, Layout, const Algo*, void*, size_t, cudaStream_t);
};

struct Blas {
  Status (*create)(void**);
  Status (*set_stream)(void*, cudaStream_t);
  Status (*set_workspace)(void*, void*, size_t);
  Status (*gemm)(void*, int, int, int, int, int, const void*, const void*, cudaDataType_t, int, const void*,
                 cudaDataType_t, int, const void*, void*, cudaDataType_t, int, int, int);
};

void die(const char* what, long code) {
  std::fprintf(stderr, "probe_gemm_algos: %s failed (%ld)\n", what, code);
  std::exit(1);
}
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(what, static_cast<long>(e));
}
void status_check(Status s, const char* what) {
  if (s != 0) die(what, s);
}

template <typename F>
void bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (!*out) die(name, 0);
}

struct Product {
  const char* layer;
  int rows, inner, cols;
};

struct Type {
  const char* name;
  cudaDataType_t data;
  int compute;
  size_t bytes;
};

// GPU time per run of `enqueue` (us): a graph of kReplayRuns runs, the
// median of kReplays replays timed by events.
// Waits for the stream: one float copied back through aotirt's copy routine.
struct StreamWait {
  aotirt_tensor* device = nullptr;
  aotirt_tensor* host = nullptr;
  void operator()() const {
    if (aotirt_tensor_copy(host, device) != AOTIRT_OK) die(aotirt_last_error_message(), 0);
  }
};

template <typename F>
double time_us(cudaStream_t stream, const StreamWait& wait, F enqueue) {
  enqueue();  // first run outside the capture: lazy loading of the kernel
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
  for (int i = 0; i < kReplayRuns; ++i) enqueue();
  cuda_check(cudaStreamEndCapture(stream, &graph), "end capture");
  cuda_check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "event");
  cuda_check(cudaEventCreate(&stop), "event");
  cuda_check(cudaGraphLaunch(exec, stream), "replay");  // warm
  std::vector<double> samples;
  for (int r = 0; r < kReplays; ++r) {
    cuda_check(cudaEventRecord(start, stream), "record");
    cuda_check(cudaGraphLaunch(exec, stream), "replay");
    cuda_check(cudaEventRecord(stop, stream), "record");
    wait();
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    samples.push_back(1000.0 * ms / kReplayRuns);
  }
  std::sort(samples.begin(), samples.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return samples[samples.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LIBCUBLASLT LIBCUBLAS\n", argv[0]);
    return 2;
  }
  void* lt_lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  void* blas_lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!lt_lib || !blas_lib) die(dlerror(), 0);
  Lt lt;
  bind(lt_lib, "cublasLtCreate", &lt.create);
  bind(lt_lib, "cublasLtMatmulDescCreate", &lt.desc_create);
  bind(lt_lib, "cublasLtMatmulDescSetAttribute", &lt.desc_set);
  bind(lt_lib, "cublasLtMatrixLayoutCreate", &lt.layout_create);
  bind(lt_lib, "cublasLtMatmulPreferenceCreate", &lt.pref_create);
  bind(lt_lib, "cublasLtMatmulPreferenceSetAttribute", &lt.pref_set);
  bind(lt_lib, "cublasLtMatmulAlgoGetHeuristic", &lt.heuristic);
  bind(lt_lib, "cublasLtMatmul", &lt.matmul);
  bind(lt_lib, "cublasLtMatmulDescDestroy", &lt.desc_destroy);
  bind(lt_lib, "cublasLtMatrixLayoutDestroy", &lt.layout_destroy);
  bind(lt_lib, "cublasLtMatmulPreferenceDestroy", &lt.pref_destroy);
  Blas blas;
  bind(blas_lib, "cublasCreate_v2", &blas.create);
  bind(blas_lib, "cublasSetStream_v2", &blas.set_stream);
  bind(blas_lib, "cublasSetWorkspace_v2", &blas.set_workspace);
  bind(blas_lib, "cublasGemmEx", &blas.gemm);

  aotirt_stream* aotirt_s = nullptr;
  if (aotirt_stream_create(0, &aotirt_s) != AOTIRT_OK) die(aotirt_last_error_message(), 0);
  cudaStream_t stream = static_cast<cudaStream_t>(aotirt_stream_handle(aotirt_s));
  StreamWait wait;
  const int64_t one = 1;
  if (aotirt_tensor_empty(1, &one, AOTIRT_DTYPE_FLOAT32, AOTIRT_DEVICE_CUDA, 0, aotirt_s, &wait.device) != AOTIRT_OK ||
      aotirt_tensor_empty(1, &one, AOTIRT_DTYPE_FLOAT32, AOTIRT_DEVICE_CPU, 0, nullptr, &wait.host) != AOTIRT_OK)
    die(aotirt_last_error_message(), 0);
  void* workspace = nullptr;
  cuda_check(cudaMallocAsync(&workspace, kWorkspaceBytes, stream), "workspace");
  void* blas_handle = nullptr;
  status_check(blas.create(&blas_handle), "cublasCreate");
  status_check(blas.set_stream(blas_handle, stream), "cublasSetStream");
  status_check(blas.set_workspace(blas_handle, workspace, kWorkspaceBytes), "cublasSetWorkspace");
  LtHandle lt_handle = nullptr;
  status_check(lt.create(&lt_handle), "cublasLtCreate");

  const Product products[] = {
      {"64->64 3x3 56x56 b2", 6272, 576, 64},     {"128->128 3x3 28x28 b2", 1568, 1152, 128},
      {"256->256 3x3 14x14 b2", 392, 2304, 256},  {"512->512 3x3 7x7 b2", 98, 4608, 512},
      {"256->512 3x3 s2 b2", 98, 2304, 512},      {"128->256 3x3 s2 b2", 392, 1152, 256},
      {"256->256 3x3 14x14 b1", 196, 2304, 256},  {"512->512 3x3 7x7 b1", 49, 4608, 512},
  };
  const Type types[] = {{"float32 (tf32)", CUDA_R_32F, kCompute32FFastTF32, 4},
                        {"bfloat16", CUDA_R_16BF, kCompute32F, 2},
                        {"float16", CUDA_R_16F, kCompute32F, 2}};
  const float alpha = 1.0f, beta = 0.0f;
  std::printf("layer | dtype | cublasGemmEx default us | cuBLASLt heuristic #0 us | best listed us (index) | listed\n");
  for (const Type& t : types) {
    for (const Product& p : products) {
      void *x, *w, *y;
      cuda_check(cudaMallocAsync(&x, static_cast<size_t>(p.rows) * p.inner * t.bytes, stream), "x");
      cuda_check(cudaMallocAsync(&w, static_cast<size_t>(p.cols) * p.inner * t.bytes, stream), "w");
      cuda_check(cudaMallocAsync(&y, static_cast<size_t>(p.rows) * p.cols * t.bytes, stream), "y");
      cuda_check(cudaMemsetAsync(x, 0, static_cast<size_t>(p.rows) * p.inner * t.bytes, stream), "x");
      cuda_check(cudaMemsetAsync(w, 0, static_cast<size_t>(p.cols) * p.inner * t.bytes, stream), "w");
      // Column-major as cuBLAS reads them: y [cols, rows] = w^T [cols, inner] x [inner, rows].
      const double gemm_ex = time_us(stream, wait, [&] {
        status_check(blas.gemm(blas_handle, kOpT, kOpN, p.cols, p.rows, p.inner, &alpha, w, t.data, p.inner, x,
                               t.data, p.inner, &beta, y, t.data, p.cols, t.compute, kGemmDefault),
                     "cublasGemmEx");
      });
      Desc desc;
      status_check(lt.desc_create(&desc, t.compute, CUDA_R_32F), "desc");
      const int32_t op_t = kOpT, op_n = kOpN;
      status_check(lt.desc_set(desc, kDescTransA, &op_t, sizeof op_t), "transa");
      status_check(lt.desc_set(desc, kDescTransB, &op_n, sizeof op_n), "transb");
      Layout a, b, c;
      status_check(lt.layout_create(&a, t.data, p.inner, p.cols, p.inner), "layout a");
      status_check(lt.layout_create(&b, t.data, p.inner, p.rows, p.inner), "layout b");
      status_check(lt.layout_create(&c, t.data, p.cols, p.rows, p.cols), "layout c");
      Pref pref;
      status_check(lt.pref_create(&pref), "preference");
      const uint64_t max_ws = kWorkspaceBytes;
      status_check(lt.pref_set(pref, kPrefMaxWorkspace, &max_ws, sizeof max_ws), "preference workspace");
      Heuristic found[kRequested];
      int returned = 0;
      status_check(lt.heuristic(lt_handle, desc, a, b, c, c, pref, kRequested, found, &returned), "heuristic");
      double first = 0, best = 1e30;
      int best_index = -1;
      for (int i = 0; i < returned; ++i) {
        if (found[i].state != 0) continue;
        const double us = time_us(stream, wait, [&] {
          status_check(lt.matmul(lt_handle, desc, &alpha, w, a, x, b, &beta, y, c, y, c, &found[i].algo, workspace,
                                 kWorkspaceBytes, stream),
                       "cublasLtMatmul");
        });
        if (i == 0) first = us;
        if (us < best) best = us, best_index = i;
      }
      std::printf("%s | %s | %.2f | %.2f | %.2f (#%d) | %d\n", p.layer, t.name, gemm_ex, first, best, best_index,
                  returned);
      std::fflush(stdout);
      status_check(lt.pref_destroy(pref), "preference destroy");
      for (Layout l : {a, b, c}) status_check(lt.layout_destroy(l), "layout destroy");
      status_check(lt.desc_destroy(desc), "desc destroy");
      cuda_check(cudaFreeAsync(x, stream), "free x");
      cuda_check(cudaFreeAsync(w, stream), "free w");
      cuda_check(cudaFreeAsync(y, stream), "free y");
    }
  }
  return 0;
}
