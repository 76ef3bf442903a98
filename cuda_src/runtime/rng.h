// Random number generator state: a seed and the next Philox counter, per
// handle, for the random shims (cuda_src/shims/random/).
//
// Each handle owns a Generator and makes it the thread's current one for the
// length of a run, as it does its stream; shims called outside any run (a
// test through ctypes) use the process's default generator. The seed is
// AOTIRT_SEED when set (a decimal or 0x-hex unsigned 64-bit integer), else
// torch's default seed (67280421310721), until aotirt_handle_set_seed (or,
// for the default generator, aotirt_set_default_seed) replaces it, which
// also restarts the counter: the same seed then draws the same numbers.
//
// Why the CUDA state lives in device memory. A CUDA graph replays the
// kernel arguments it captured; a seed and counter passed as arguments would
// make every replay draw the numbers of the capture. So, per device, the
// generator keeps kDeviceStateWords 64-bit words in device memory: {seed,
// next counter, blocks finished}. A draw is one kernel: every thread reads
// the seed and counter, each block counts itself finished in word 2 once its
// threads have read them, and the block that finishes last advances the
// counter by what the draw used, its ticket putting word 2 back to 0 (0
// between draws). That count assumes the draws on one state run one after
// another, which use_on_device's ordering gives eager draws and a graph
// replayed on the stream it was captured from; two replays of graphs with
// draws, run at once on two streams, would leave the count wrong until the
// next seed (the earlier two-kernel scheme would have repeated numbers).
// Inside a graph that kernel is a node like any other, so each replay reads
// the counter the previous one left and draws new numbers, with no host
// step between replays. (torch gets the same effect differently: its
// kernels add a captured per-graph offset to a seed and offset read from
// device tensors, which the host refreshes before each replay,
// CUDAGeneratorImpl's replay_prologue.) Nothing here
// waits for the GPU: the state is made, seeded and advanced stream-ordered.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's default_rng_seed_val
constexpr int kDeviceStateWords = 3;  // {seed, next counter, blocks of the running draw finished}

class Generator {
 public:
  Generator() = default;
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // The seed (AOTIRT_SEED or the default until set; a bad AOTIRT_SEED is an
  // error naming it).
  aotirt_status seed(uint64_t* out);
  // A new seed, and the counter back to 0 on the host and on every device
  // (queued on the stream that last used that device's state: no wait).
  aotirt_status set_seed(uint64_t seed);

  // A CPU draw of `blocks` counters: `seed` and the first counter it owns.
  aotirt_status reserve_host(uint64_t blocks, uint64_t* seed, uint64_t* first);

  // A CUDA draw on `stream` (of `device`): `words` receives the device
  // memory {seed, next counter, 0} (the draw's kernel advances the counter
  // and leaves word 2 at 0 again), made and seeded on `stream` at first use
  // (refused while `stream` is being captured: that memory would belong to
  // the graph), with `stream` ordered after the state's earlier users. The
  // returned lock must be held until the draw is queued,
  // so that another stream's draw is ordered after them.
  aotirt_status use_on_device(int device, Stream* stream, uint64_t** words, std::unique_lock<std::mutex>* lock);

 private:
  aotirt_status seed_locked(uint64_t* out);

  std::mutex mutex_;
  bool seeded_ = false;
  uint64_t seed_ = kDefaultSeed;
  uint64_t host_counter_ = 0;
  // One int64 [kDeviceStateWords] tensor per device that has drawn; its `stream` is the one
  // that last used it outside a capture.
  std::vector<std::pair<int, std::unique_ptr<Tensor>>> device_states_;
};

// The thread's current generator: a handle's during its runs, else the
// process's default (never destroyed: shims may run during exit).
Generator& current_generator();
Generator& default_generator();

// Makes a handle's generator current for a scope (a run), restoring the
// previous one after.
class GeneratorScope {
 public:
  explicit GeneratorScope(Generator* g);
  ~GeneratorScope();
  GeneratorScope(const GeneratorScope&) = delete;
  GeneratorScope& operator=(const GeneratorScope&) = delete;

 private:
  Generator* previous_;
};

}  // namespace aotirt
