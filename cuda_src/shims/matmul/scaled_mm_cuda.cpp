// scaled_mm::run_cuda: one cublasLtMatmul on the current stream of the
// output's device, as torch's _scaled_mm does it (float8 tensor cores,
// sm_89 and newer).
//
// cuBLASLt is column-major and its float8 kernels take only A transposed
// and B not ("TN"), so the row-major result D = mat1 @ mat2 [m, n] is
// computed as its column-major transpose D^T [n, m] = mat2^T mat1^T:
// cuBLASLt's A is mat2 (column-major k x n, ld mat2.stride(1), transposed),
// its B is mat1 (row-major [m, k] is column-major k x m, ld mat1.stride(0)),
// D is n x m with ld n. So A's scale is scale_b and B's scale_a, and the
// bias epilogue adds bias[row of D^T] = bias[column of D], as torch's.
//
// The algorithm is cuBLASLt's first heuristic answer, asked once per
// problem (sizes, leading dimensions, dtypes, bias, fast accumulation,
// device) in an eager call and cached: a call while the stream is captured
// into a CUDA graph must find its answer there. The workspace the answer
// needs comes from the stream-ordered pool.

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "shims/libs/cublaslt.h"
#include "shims/matmul/scaled_mm.h"

namespace aotirt {
namespace scaled_mm {
namespace {

constexpr uint64_t kMaxWorkspace = uint64_t{32} << 20;

// The descriptors of one call, destroyed at scope exit.
struct Descriptors {
  const cublaslt::Api* lt = nullptr;
  cublaslt::MatmulDesc desc = nullptr;
  cublaslt::Layout a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublaslt::Preference pref = nullptr;
  ~Descriptors() {
    if (pref) lt->pref_destroy(pref);
    for (cublaslt::Layout l : {a, b, c, d})
      if (l) lt->layout_destroy(l);
    if (desc) lt->desc_destroy(desc);
  }
};

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, int32_t, int32_t, int32_t, bool>;

std::mutex& cache_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

std::map<Key, cublaslt::HeuristicResult>& cache() {  // never destroyed: shims may run during exit
  static auto* c = new std::map<Key, cublaslt::HeuristicResult>();
  return *c;
}

aotirt_status set(const Call& call, const cublaslt::Api& lt, cublaslt::MatmulDesc desc, int attr, const void* value,
                  size_t bytes) {
  return cublaslt::check(lt, call.name, "cublasLtMatmulDescSetAttribute", lt.desc_set(desc, attr, value, bytes));
}

}  // namespace

aotirt_status run_cuda(const Call& call) {
  if (call.m == 0 || call.n == 0) return AOTIRT_OK;
  const Tensor &a = *call.a, &b = *call.b, &out = *call.out;
  const int device = out.storage->device_index;
  AOTIRT_TRY(check_device_usable(device));
  int sm = 0;
  AOTIRT_TRY(compute_capability(device, &sm));
  if (sm < 89)
    return fail(AOTIRT_ERROR_VALUE, std::string(call.name) + ": float8 GEMMs need compute capability 8.9 or newer; "
                                                             "device " + std::to_string(device) + " has " +
                                        std::to_string(sm / 10) + "." + std::to_string(sm % 10));
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  StreamRef stream;
  AOTIRT_TRY(stream_for_device(device, &stream));
  for (const Tensor* t : {call.a, call.b, call.scale_a, call.scale_b, call.bias, call.scale_result,
                          static_cast<const Tensor*>(call.out)})
    if (t) AOTIRT_TRY(use_on(*t, stream.get()));
  if (call.k == 0) {  // nothing to multiply: the product is 0
    if (call.bias)
      return fail(AOTIRT_ERROR_VALUE, std::string(call.name) + ": k = 0 with a bias is not supported");
    AOTIRT_CUDA_TRY(cudaMemsetAsync(out.data(), 0, out.numel() * out.itemsize(), stream->handle));
    return AOTIRT_OK;
  }

  const cublaslt::Api* lt = nullptr;
  AOTIRT_TRY(cublaslt::api(call.name, &lt));
  cublaslt::Handle handle = nullptr;
  AOTIRT_TRY(cublaslt::thread_handle(call.name, device, &handle));
  Descriptors d;
  d.lt = lt;
  const char* who = call.name;
  AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatmulDescCreate",
                             lt->desc_create(&d.desc, cublas::kCompute32F, CUDA_R_32F)));
  const int32_t trans_a = cublaslt::kOpT, trans_b = cublaslt::kOpN;
  AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescTransA, &trans_a, sizeof trans_a));
  AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescTransB, &trans_b, sizeof trans_b));
  const void* scale_a_ptr = call.scale_b->data();  // cuBLASLt's A is mat2
  const void* scale_b_ptr = call.scale_a->data();
  AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescAScalePointer, &scale_a_ptr, sizeof scale_a_ptr));
  AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescBScalePointer, &scale_b_ptr, sizeof scale_b_ptr));
  if (call.scale_result) {
    const void* scale_d = call.scale_result->data();
    AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescDScalePointer, &scale_d, sizeof scale_d));
  }
  const int8_t fast = call.fast_accum ? 1 : 0;
  AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescFastAccum, &fast, sizeof fast));
  const uint32_t epilogue = call.bias ? cublaslt::kEpilogueBias : cublaslt::kEpilogueDefault;
  AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescEpilogue, &epilogue, sizeof epilogue));
  if (call.bias) {
    const void* bias_ptr = call.bias->data();
    const int32_t bias_type = cublas::data_type(call.bias->dtype);
    AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescBiasPointer, &bias_ptr, sizeof bias_ptr));
    AOTIRT_TRY(set(call, *lt, d.desc, cublaslt::kDescBiasDataType, &bias_type, sizeof bias_type));
  }
  // C is not read (beta = 0) but must have a type cuBLASLt takes with D:
  // D's own, or for a float8 D the bias's (float16 without one), as torch.
  const int32_t c_dtype = !is_float8(call.out_dtype) ? call.out_dtype
                          : call.bias               ? call.bias->dtype
                                                    : AOTIRT_DTYPE_FLOAT16;
  const int64_t lda = b.strides[1], ldb = a.strides[0];
  const uint64_t m = static_cast<uint64_t>(call.m), n = static_cast<uint64_t>(call.n),
                 k = static_cast<uint64_t>(call.k);
  AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatrixLayoutCreate",
                             lt->layout_create(&d.a, cublas::data_type(b.dtype), k, n, lda)));
  AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatrixLayoutCreate",
                             lt->layout_create(&d.b, cublas::data_type(a.dtype), k, m, ldb)));
  AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatrixLayoutCreate",
                             lt->layout_create(&d.c, cublas::data_type(c_dtype), n, m, call.n)));
  AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatrixLayoutCreate",
                             lt->layout_create(&d.d, cublas::data_type(call.out_dtype), n, m, call.n)));

  const Key key{device, call.m, call.n, call.k, lda, ldb, a.dtype, b.dtype, call.out_dtype,
                call.bias ? call.bias->dtype : -1, call.fast_accum};
  cublaslt::HeuristicResult chosen{};
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex());
    auto it = cache().find(key);
    if (it != cache().end()) {
      chosen = it->second;
      cached = true;
    }
  }
  if (!cached) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream->handle, &capturing));
    if (capturing != cudaStreamCaptureStatusNone)
      return fail(AOTIRT_ERROR_VALUE, std::string(who) + ": no cuBLASLt algorithm was chosen for this problem "
                                                         "before the CUDA graph capture; run it eagerly first "
                                                         "(warmup >= 1)");
    AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatmulPreferenceCreate", lt->pref_create(&d.pref)));
    AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatmulPreferenceSetAttribute",
                               lt->pref_set(d.pref, cublaslt::kPrefMaxWorkspaceBytes, &kMaxWorkspace,
                                            sizeof kMaxWorkspace)));
    int returned = 0;
    AOTIRT_TRY(cublaslt::check(*lt, who, "cublasLtMatmulAlgoGetHeuristic",
                               lt->heuristic(handle, d.desc, d.a, d.b, d.c, d.d, d.pref, 1, &chosen, &returned)));
    if (returned < 1)
      return fail(AOTIRT_ERROR_AOTI, std::string(who) + ": cuBLASLt has no algorithm for this float8 GEMM (m " +
                                         std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) +
                                         ", " + dtype_name(a.dtype) + " x " + dtype_name(b.dtype) + " -> " +
                                         dtype_name(call.out_dtype) + "); leading dimensions and data addresses "
                                                                      "must be multiples of 16 bytes");
    std::lock_guard<std::mutex> lock(cache_mutex());
    cache().emplace(key, chosen);
  }
  StorageRef workspace;  // freed stream-ordered after the GEMM
  if (chosen.workspace_size)
    AOTIRT_TRY(allocate_storage(chosen.workspace_size, AOTIRT_DEVICE_CUDA, device, stream, &workspace));
  const float one = 1.0f, zero = 0.0f;
  // C is never read (beta = 0), but cuBLASLt refuses a null C, and C == D
  // when their descriptors differ (a float8 D has a 16-bit C): status 7 on
  // the H200. mat1 is an address it accepts for C, as torch passes it.
  const void* c_ptr = c_dtype == call.out_dtype ? out.data() : a.data();
  return cublaslt::check(*lt, who, "cublasLtMatmul",
                         lt->matmul(handle, d.desc, &one, b.data(), d.a, a.data(), d.b, &zero, c_ptr, d.c,
                                    out.data(), d.d, &chosen.algo, workspace ? workspace->data : nullptr,
                                    chosen.workspace_size, stream->handle));
}

}  // namespace scaled_mm
}  // namespace aotirt
