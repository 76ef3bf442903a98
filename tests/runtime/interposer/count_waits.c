/* Test-only: counts the host-blocking CUDA calls a process makes.
 *
 * Preloaded (LD_PRELOAD) into a test subprocess, these definitions come first
 * in symbol lookup, so every call that libaotirt or a model library makes to
 * one of these functions lands here, is counted, and is forwarded to the real
 * function. Calls that the CUDA runtime makes inside itself are not seen:
 * what is counted is what our code asks for, which is what the one rule is
 * about. No CUDA headers: the signatures only pass pointers and integers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define WAITS(X)                \
  X(cudaStreamSynchronize)      \
  X(cudaDeviceSynchronize)      \
  X(cudaEventSynchronize)       \
  X(cudaThreadSynchronize)      \
  X(cudaMemcpy)                 \
  X(cudaMemcpy2D)               \
  X(cudaMemset)                 \
  X(cudaFree)                   \
  X(cudaFreeHost)               \
  X(cudaMalloc)                 \
  X(cuStreamSynchronize)        \
  X(cuCtxSynchronize)           \
  X(cuEventSynchronize)         \
  X(cuMemcpyDtoH_v2)            \
  X(cuMemcpyHtoD_v2)            \
  X(cuMemFree_v2)

#define COUNTER(name) static atomic_long count_##name;
WAITS(COUNTER)

/* Counted too, though they never wait (so not in WAITS, which
 * tests/runtime/test_one_rule.py reads): the stream-ordered pool's calls,
 * which tell whether a stream's block cache served an allocation. */
#define POOL_CALLS(X)           \
  X(cudaMallocAsync)            \
  X(cudaFreeAsync)
POOL_CALLS(COUNTER)

/* And the stream's queued copies (never a wait either): they tell whether a
 * graph replay moved its device inputs by cudaMemcpyAsync or in its own
 * kernel. */
#define QUEUED_COPIES(X)        \
  X(cudaMemcpyAsync)
QUEUED_COPIES(COUNTER)

/* The next definition of `name`. RTLD_NEXT searches the global scope only,
 * and a Python extension's libcudart is loaded locally (until aotirt opens a
 * model and promotes it), so fall back to the loaded runtime and driver. */
static void* real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  static const char* libraries[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so", "libcuda.so.1"};
  for (size_t i = 0; !f && i < sizeof(libraries) / sizeof(libraries[0]); ++i) {
    void* lib = dlopen(libraries[i], RTLD_NOW | RTLD_NOLOAD);
    if (lib) f = dlsym(lib, name);
  }
  return f;
}

/* What a forwarder returns when the real function is nowhere to be found:
 * cudaErrorUnknown / CUDA_ERROR_UNKNOWN, never a call through NULL. */
#define NOT_FOUND 999

/* Forwarders: each counts, then calls the next definition of its name. */
typedef int (*fn0)(void);
typedef int (*fn1)(void*);
typedef int (*fn3)(void*, const void*, size_t, int);

#define FORWARD0(name)                             \
  int name(void) {                                 \
    atomic_fetch_add(&count_##name, 1);            \
    fn0 f = (fn0)real(#name);                      \
    return f ? f() : NOT_FOUND;                    \
  }
#define FORWARD1(name)                             \
  int name(void* a) {                              \
    atomic_fetch_add(&count_##name, 1);            \
    fn1 f = (fn1)real(#name);                      \
    return f ? f(a) : NOT_FOUND;                   \
  }

FORWARD1(cudaStreamSynchronize)
FORWARD0(cudaDeviceSynchronize)
FORWARD1(cudaEventSynchronize)
FORWARD0(cudaThreadSynchronize)
FORWARD1(cudaFree)
FORWARD1(cudaFreeHost)
FORWARD1(cuStreamSynchronize)
FORWARD0(cuCtxSynchronize)
FORWARD1(cuEventSynchronize)

int cudaMemcpy(void* dst, const void* src, size_t n, int kind) {
  atomic_fetch_add(&count_cudaMemcpy, 1);
  fn3 f = (fn3)real("cudaMemcpy");
  return f ? f(dst, src, n, kind) : NOT_FOUND;
}

int cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h, int kind) {
  atomic_fetch_add(&count_cudaMemcpy2D, 1);
  typedef int (*fn)(void*, size_t, const void*, size_t, size_t, size_t, int);
  fn f = (fn)real("cudaMemcpy2D");
  return f ? f(dst, dpitch, src, spitch, w, h, kind) : NOT_FOUND;
}

int cudaMemset(void* p, int v, size_t n) {
  atomic_fetch_add(&count_cudaMemset, 1);
  typedef int (*fn)(void*, int, size_t);
  fn f = (fn)real("cudaMemset");
  return f ? f(p, v, n) : NOT_FOUND;
}

int cudaMalloc(void** p, size_t n) {
  atomic_fetch_add(&count_cudaMalloc, 1);
  typedef int (*fn)(void**, size_t);
  fn f = (fn)real("cudaMalloc");
  return f ? f(p, n) : NOT_FOUND;
}

int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t n) {
  atomic_fetch_add(&count_cuMemcpyDtoH_v2, 1);
  typedef int (*fn)(void*, unsigned long long, size_t);
  fn f = (fn)real("cuMemcpyDtoH_v2");
  return f ? f(dst, src, n) : NOT_FOUND;
}

int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t n) {
  atomic_fetch_add(&count_cuMemcpyHtoD_v2, 1);
  typedef int (*fn)(unsigned long long, const void*, size_t);
  fn f = (fn)real("cuMemcpyHtoD_v2");
  return f ? f(dst, src, n) : NOT_FOUND;
}

int cuMemFree_v2(unsigned long long p) {
  atomic_fetch_add(&count_cuMemFree_v2, 1);
  typedef int (*fn)(unsigned long long);
  fn f = (fn)real("cuMemFree_v2");
  return f ? f(p) : NOT_FOUND;
}

int cudaMallocAsync(void** p, size_t n, void* stream) {
  atomic_fetch_add(&count_cudaMallocAsync, 1);
  typedef int (*fn)(void**, size_t, void*);
  fn f = (fn)real("cudaMallocAsync");
  return f ? f(p, n, stream) : NOT_FOUND;
}

int cudaFreeAsync(void* p, void* stream) {
  atomic_fetch_add(&count_cudaFreeAsync, 1);
  typedef int (*fn)(void*, void*);
  fn f = (fn)real("cudaFreeAsync");
  return f ? f(p, stream) : NOT_FOUND;
}

int cudaMemcpyAsync(void* dst, const void* src, size_t n, int kind, void* stream) {
  atomic_fetch_add(&count_cudaMemcpyAsync, 1);
  typedef int (*fn)(void*, const void*, size_t, int, void*);
  fn f = (fn)real("cudaMemcpyAsync");
  return f ? f(dst, src, n, kind, stream) : NOT_FOUND;
}

/* Read and reset from the test (through ctypes). */
long waits_count(const char* name) {
#define READ(n) if (strcmp(name, #n) == 0) return atomic_load(&count_##n);
  WAITS(READ)
  POOL_CALLS(READ)
  QUEUED_COPIES(READ)
  return -1;
}

void waits_reset(void) {
#define RESET(n) atomic_store(&count_##n, 0);
  WAITS(RESET)
  POOL_CALLS(RESET)
  QUEUED_COPIES(RESET)
}

const char* waits_names(void) {
#define NAME(n) #n " "
  return WAITS(NAME);
}

const char* pool_call_names(void) { return POOL_CALLS(NAME); }

const char* queued_copy_names(void) { return QUEUED_COPIES(NAME); }
