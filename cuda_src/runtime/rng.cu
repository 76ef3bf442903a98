// The random number generators' state (rng.h): seeds, the host counter and
// the per-device {seed, counter, finished} words, with the one-thread kernel
// that seeds them (the draws' kernel advances them: shims/random/).

#include "runtime/rng.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "runtime/errors.h"

namespace aotirt {
namespace {

__global__ void write_state(uint64_t* words, uint64_t seed, uint64_t counter) {
  words[0] = seed;
  words[1] = counter;
  words[2] = 0;  // no block of a draw has finished
}

// AOTIRT_SEED, read once: a value strtoull takes whole, decimal or 0x-hex.
aotirt_status initial_seed(uint64_t* out) {
  static const char* text = std::getenv("AOTIRT_SEED");
  if (!text || !*text) {
    *out = kDefaultSeed;
    return AOTIRT_OK;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 0);
  if (errno != 0 || *end != '\0' || text[0] == '-')
    return fail(AOTIRT_ERROR_VALUE, std::string("AOTIRT_SEED is '") + text +
                                        "'; expected an unsigned 64-bit integer (decimal or 0x-hex)");
  *out = static_cast<uint64_t>(value);
  return AOTIRT_OK;
}

thread_local Generator* tls_generator = nullptr;

}  // namespace

aotirt_status Generator::seed_locked(uint64_t* out) {
  if (!seeded_) {
    AOTIRT_TRY(initial_seed(&seed_));
    seeded_ = true;
  }
  *out = seed_;
  return AOTIRT_OK;
}

aotirt_status Generator::seed(uint64_t* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_locked(out);
}

aotirt_status Generator::set_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  seeded_ = true;
  host_counter_ = 0;
  for (auto& entry : device_states_) {
    Tensor& state = *entry.second;
    DeviceGuard guard;
    AOTIRT_TRY(guard.enter(entry.first));
    write_state<<<1, 1, 0, state.stream->handle>>>(static_cast<uint64_t*>(state.data()), seed, 0);
    AOTIRT_CUDA_TRY(cudaGetLastError());
  }
  return AOTIRT_OK;
}

aotirt_status Generator::reserve_host(uint64_t blocks, uint64_t* seed, uint64_t* first) {
  std::lock_guard<std::mutex> lock(mutex_);
  AOTIRT_TRY(seed_locked(seed));
  *first = host_counter_;
  host_counter_ += blocks;
  return AOTIRT_OK;
}

aotirt_status Generator::use_on_device(int device, Stream* stream, uint64_t** words,
                                       std::unique_lock<std::mutex>* lock) {
  std::unique_lock<std::mutex> held(mutex_);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTIRT_CUDA_TRY(cudaStreamIsCapturing(stream->handle, &capturing));
  const bool in_capture = capturing != cudaStreamCaptureStatusNone;
  Tensor* state = nullptr;
  for (auto& entry : device_states_)
    if (entry.first == device) state = entry.second.get();
  if (!state) {
    if (in_capture)
      return fail(AOTIRT_ERROR_AOTI, "the random number generator's state on cuda:" + std::to_string(device) +
                                         " is made at its first draw, which must not be inside a CUDA graph "
                                         "capture (its memory would belong to the graph): run the model once "
                                         "before capturing it (warmup >= 1)");
    uint64_t seed = 0;
    AOTIRT_TRY(seed_locked(&seed));
    StreamRef home = StreamRef::share(stream);
    StorageRef storage;
    AOTIRT_TRY(allocate_storage(kDeviceStateWords * sizeof(uint64_t), AOTIRT_DEVICE_CUDA, device, home, &storage));
    const int64_t size = kDeviceStateWords;
    Tensor* made = nullptr;
    AOTIRT_TRY(make_tensor(storage, 1, &size, nullptr, 0, AOTIRT_DTYPE_INT64, home, &made));
    std::unique_ptr<Tensor> owned(made);
    write_state<<<1, 1, 0, stream->handle>>>(static_cast<uint64_t*>(made->data()), seed, 0);
    AOTIRT_CUDA_TRY(cudaGetLastError());
    device_states_.emplace_back(device, std::move(owned));
    state = made;
  } else {
    AOTIRT_TRY(use_on(*state, stream));
    // A capture's stream is private and its work is the graph's: the state
    // stays with the stream that launches graphs and draws eagerly.
    if (!in_capture && state->stream.get() != stream) state->stream = StreamRef::share(stream);
  }
  *words = static_cast<uint64_t*>(state->data());
  *lock = std::move(held);
  return AOTIRT_OK;
}

Generator& default_generator() {
  static Generator* g = new Generator();
  return *g;
}

Generator& current_generator() { return tls_generator ? *tls_generator : default_generator(); }

GeneratorScope::GeneratorScope(Generator* g) : previous_(tls_generator) { tls_generator = g; }
GeneratorScope::~GeneratorScope() { tls_generator = previous_; }

}  // namespace aotirt
