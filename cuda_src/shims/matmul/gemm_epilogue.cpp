// matmul::run_cuda_epilogue (gemm_epilogue.h): addmm with a bias row as one
// cublasLtMatmul.
//
// The row-major out goes in as gemm_layout.h maps it for cuBLAS: D = out^T
// (column-major N x M) = mat2^T mat1^T, so cuBLASLt's A is mat2 and its B
// mat1, each N or T as the plan reads it in place, and the epilogue's bias,
// one value per row of D, is one per column of out: self's row. cuBLASLt
// computes epilogue(alpha * A B + beta * C + bias); beta is 0 (C, which is D,
// is not read), so alpha scales the product only, as addmm's with beta 1.
//
// Every problem (device, dtype, epilogue, operations, sizes, leading
// dimensions, buffer alignments) gets its descriptor, layouts and the
// heuristic's first algorithm once, in an eager call, and keeps them: a call
// then only sets the bias pointer and queues the matmul. The descriptor is
// shared by every thread, so those two steps hold the cache's mutex. A
// problem first met while its stream is captured into a CUDA graph, or one
// cuBLASLt has no algorithm for, takes the cuBLAS path instead.

#include "shims/matmul/gemm_epilogue.h"

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/dtypes.h"
#include "runtime/errors.h"
#include "runtime/tensor.h"
#include "shims/libs/cublaslt.h"
#include "shims/matmul/gemm_layout.h"

namespace aotirt {
namespace matmul {
namespace {

constexpr uint64_t kMaxWorkspace = uint64_t{32} << 20;  // as scaled_mm's
// A bias less aligned than this goes the cuBLAS way: no preference tells
// the heuristic how the bias vector is aligned, and 16 bytes (one vector
// load) is what any of its kernels can rely on.
constexpr uintptr_t kBiasAlignment = 16;

uint32_t epilogue_code(Epilogue e) {
  switch (e) {
    case Epilogue::ReluBias: return cublaslt::kEpilogueReluBias;
    case Epilogue::GeluBias: return cublaslt::kEpilogueGeluBias;
    default: return cublaslt::kEpilogueBias;
  }
}

// The largest power of two, up to the 256 cuBLASLt assumes, that divides the
// address: what the heuristic is told each buffer has.
uint32_t alignment(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// Whether this path takes `p`, and the cuBLAS plan it then follows: the
// factors read in place (no copies), out written in place as D = out^T.
bool takes(const Problem& p, Epilogue epilogue, gemm_layout::Plan* plan) {
  if (p.int8 || p.batch != 1 || !p.has_self || p.beta != 1.0 || p.alpha == 0.0) return false;
  const int32_t dtype = p.out.dtype;
  if (dtype != AOTIRT_DTYPE_FLOAT32 && dtype != AOTIRT_DTYPE_FLOAT16 && dtype != AOTIRT_DTYPE_BFLOAT16) return false;
  // float32 gelu included: torch runs it on this epilogue, and torch's result
  // there (H200, 256x1024 @ 1024x4096) was within 1.1e-6 of the largest
  // output of float64 gelu(approximate="tanh"); a bias copy, GEMM and
  // activation kernel took 1.24x torch's time.
  // torch's rule too: cuBLASLt's heuristic rejects some problems with a
  // dimension of 1 (k == 0 and alpha == 0 are the cuBLAS path's special cases).
  if (p.m < 2 || p.n < 2 || p.k < 2) return false;
  // self must be one row repeated down out ([N], [1, N] or an expanded row).
  if (p.self.strides[1] != 0 || p.self.strides[2] != 1) return false;
  if (reinterpret_cast<uintptr_t>(p.self.data()) % kBiasAlignment != 0) return false;
  if (p.out_is_self || p.out_overlaps_input) return false;
  *plan = gemm_layout::plan(p.batch, p.m, p.n, p.k, p.a.strides, p.b.strides, p.out.strides, p.out_overlaps_input);
  return plan->transposed && !plan->scratch && !plan->copy_a && !plan->copy_b;
}

// One problem's cuBLASLt objects; never destroyed once cached.
struct Entry {
  const cublaslt::Api* lt = nullptr;
  cublaslt::MatmulDesc desc = nullptr;
  cublaslt::Layout a = nullptr, b = nullptr, d = nullptr;
  cublaslt::HeuristicResult chosen{};
  bool usable = false;  // the heuristic found an algorithm
  Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry() {
    for (cublaslt::Layout l : {a, b, d})
      if (l) lt->layout_destroy(l);
    if (desc) lt->desc_destroy(desc);
  }
};

struct Preference {  // destroyed at scope exit
  const cublaslt::Api* lt = nullptr;
  cublaslt::Preference pref = nullptr;
  ~Preference() {
    if (pref) lt->pref_destroy(pref);
  }
};

// device, dtype, epilogue, op A, op B, m, n, k, lda, ldb, ldd, and the
// alignments of A, B, D and the bias.
using Key = std::array<int64_t, 15>;

std::mutex& cache_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

std::map<Key, std::unique_ptr<Entry>>& cache() {  // never destroyed: shims may run during exit
  static auto* c = new std::map<Key, std::unique_ptr<Entry>>();
  return *c;
}

aotirt_status set(const Entry& e, const char* who, int attr, const void* value, size_t bytes) {
  return cublaslt::check(*e.lt, who, "cublasLtMatmulDescSetAttribute", e.lt->desc_set(e.desc, attr, value, bytes));
}

aotirt_status make_layout(const Entry& e, const char* who, cudaDataType_t type, int64_t rows, int64_t cols,
                          int64_t ld, cublaslt::Layout* out) {
  return cublaslt::check(*e.lt, who, "cublasLtMatrixLayoutCreate",
                         e.lt->layout_create(out, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
}

// The descriptor, layouts and algorithm for `key`'s problem.
aotirt_status build(const Problem& p, const gemm_layout::Plan& plan, Epilogue epilogue, const Key& key,
                    const cublaslt::Api& lt, cublaslt::Handle handle, const void* bias, std::unique_ptr<Entry>* out) {
  const char* who = p.name;
  auto e = std::make_unique<Entry>();
  e->lt = &lt;
  // float math and float scalars for all three dtypes; no TF32 for float32
  // (torch's default, and the cuBLAS path's compute type).
  AOTIRT_TRY(cublaslt::check(lt, who, "cublasLtMatmulDescCreate",
                             lt.desc_create(&e->desc, cublas::kCompute32F, CUDA_R_32F)));
  const int32_t trans_a = plan.x.op, trans_b = plan.y.op;
  AOTIRT_TRY(set(*e, who, cublaslt::kDescTransA, &trans_a, sizeof trans_a));
  AOTIRT_TRY(set(*e, who, cublaslt::kDescTransB, &trans_b, sizeof trans_b));
  const uint32_t code = epilogue_code(epilogue);
  AOTIRT_TRY(set(*e, who, cublaslt::kDescEpilogue, &code, sizeof code));
  // The bias has D's type (cuBLASLt's default, said outright). This call's
  // pointer is set for the heuristic; each call sets its own.
  const cudaDataType_t type = cublas::data_type(p.out.dtype);
  const int32_t bias_type = type;
  AOTIRT_TRY(set(*e, who, cublaslt::kDescBiasDataType, &bias_type, sizeof bias_type));
  AOTIRT_TRY(set(*e, who, cublaslt::kDescBiasPointer, &bias, sizeof bias));

  // op N: stored as the (rows x cols) matrix cuBLAS multiplies; op T: as its
  // transpose. A is m x k after its op, B k x n, D m x n.
  const int64_t m = plan.m, n = plan.n, k = plan.k;
  const bool a_n = plan.x.op == gemm_layout::kOpN, b_n = plan.y.op == gemm_layout::kOpN;
  AOTIRT_TRY(make_layout(*e, who, type, a_n ? m : k, a_n ? k : m, plan.x.ld, &e->a));
  AOTIRT_TRY(make_layout(*e, who, type, b_n ? k : n, b_n ? n : k, plan.y.ld, &e->b));
  AOTIRT_TRY(make_layout(*e, who, type, m, n, plan.c.ld, &e->d));

  Preference pref;
  pref.lt = &lt;
  AOTIRT_TRY(cublaslt::check(lt, who, "cublasLtMatmulPreferenceCreate", lt.pref_create(&pref.pref)));
  AOTIRT_TRY(cublaslt::check(lt, who, "cublasLtMatmulPreferenceSetAttribute",
                             lt.pref_set(pref.pref, cublaslt::kPrefMaxWorkspaceBytes, &kMaxWorkspace,
                                         sizeof kMaxWorkspace)));
  const uint32_t align_a = static_cast<uint32_t>(key[11]), align_b = static_cast<uint32_t>(key[12]),
                 align_d = static_cast<uint32_t>(key[13]);
  const std::pair<int, uint32_t> alignments[] = {{cublaslt::kPrefMinAlignmentA, align_a},
                                                 {cublaslt::kPrefMinAlignmentB, align_b},
                                                 {cublaslt::kPrefMinAlignmentC, align_d},  // C is D
                                                 {cublaslt::kPrefMinAlignmentD, align_d}};
  for (const auto& [attr, value] : alignments)
    AOTIRT_TRY(cublaslt::check(lt, who, "cublasLtMatmulPreferenceSetAttribute",
                               lt.pref_set(pref.pref, attr, &value, sizeof value)));
  int returned = 0;
  const cublas::Status status =
      lt.heuristic(handle, e->desc, e->a, e->b, e->d, e->d, pref.pref, 1, &e->chosen, &returned);
  // No algorithm for this problem is not an error: the cuBLAS path takes it.
  if (status != cublaslt::kStatusNotSupported)
    AOTIRT_TRY(cublaslt::check(lt, who, "cublasLtMatmulAlgoGetHeuristic", status));
  e->usable = status == cublas::kSuccess && returned > 0;
  *out = std::move(e);
  return AOTIRT_OK;
}

// The cached entry for `key`, built first when absent; null when absent
// while `stream` is being captured (no heuristic query inside a capture).
aotirt_status entry_for(const Problem& p, const gemm_layout::Plan& plan, Epilogue epilogue, const Key& key,
                        const cublaslt::Api& lt, cublaslt::Handle handle, const void* bias, const Stream& stream,
                        Entry** out) {
  *out = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache().find(key);
    if (it != cache().end()) {
      *out = it->second.get();
      return AOTIRT_OK;
    }
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream.handle, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return AOTIRT_OK;
  std::unique_ptr<Entry> built;
  AOTIRT_TRY(build(p, plan, epilogue, key, lt, handle, bias, &built));
  std::lock_guard<std::mutex> lock(cache_mutex());
  // Another thread may have built the same entry meanwhile: keep the first
  // (ours is destroyed with `built`).
  auto it = cache().try_emplace(key, std::move(built)).first;
  *out = it->second.get();
  return AOTIRT_OK;
}

}  // namespace

aotirt_status run_cuda_epilogue(const Problem& p, Epilogue epilogue, StreamRef* stream_out, bool* ran) {
  *ran = false;
  gemm_layout::Plan plan;
  if (!takes(p, epilogue, &plan)) return AOTIRT_OK;
  const int device = p.out.storage->device_index;
  AOTIRT_TRY(check_device_usable(device));
  DeviceGuard guard;  // a cuBLASLt handle belongs to the device current at its creation
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  const cublaslt::Api* lt = nullptr;
  AOTIRT_TRY(cublaslt::api(p.name, &lt));
  cublaslt::Handle handle = nullptr;
  AOTIRT_TRY(cublaslt::thread_handle(p.name, device, &handle));

  const void* a_data = p.b.data();  // cuBLASLt's A is mat2, its B mat1 (D = out^T)
  const void* b_data = p.a.data();
  void* d_data = p.out.data();
  const void* bias = p.self.data();
  const Key key{device, p.out.dtype, static_cast<int64_t>(epilogue), plan.x.op, plan.y.op, plan.m, plan.n, plan.k,
                plan.x.ld, plan.y.ld, plan.c.ld, alignment(a_data), alignment(b_data), alignment(d_data),
                alignment(bias)};
  Entry* entry = nullptr;
  AOTIRT_TRY(entry_for(p, plan, epilogue, key, *lt, handle, bias, *stream, &entry));
  if (!entry || !entry->usable) return AOTIRT_OK;

  AOTIRT_TRY(use_on(p.a, stream.get()));
  AOTIRT_TRY(use_on(p.b, stream.get()));
  AOTIRT_TRY(use_on(p.self, stream.get()));
  AOTIRT_TRY(use_on(p.out, stream.get()));  // earlier work on out's memory comes first
  StorageRef workspace;  // freed stream-ordered after the matmul
  const size_t workspace_bytes = entry->chosen.workspace_size;
  if (workspace_bytes)
    AOTIRT_TRY(allocate_storage(workspace_bytes, AOTIRT_DEVICE_CUDA, device, stream, &workspace));
  const float alpha = static_cast<float>(p.alpha), beta = 0.0f;
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    AOTIRT_TRY(set(*entry, p.name, cublaslt::kDescBiasPointer, &bias, sizeof bias));
    AOTIRT_TRY(cublaslt::check(*lt, p.name, "cublasLtMatmul",
                               lt->matmul(handle, entry->desc, &alpha, a_data, entry->a, b_data, entry->b, &beta,
                                          d_data, entry->d, d_data, entry->d, &entry->chosen.algo,
                                          workspace ? workspace->data : nullptr, workspace_bytes, stream->handle)));
  }
  *stream_out = std::move(stream);
  *ran = true;
  return AOTIRT_OK;
}

}  // namespace matmul
}  // namespace aotirt
