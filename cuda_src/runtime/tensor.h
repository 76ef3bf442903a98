// Tensors and their storage: the object behind every AtenTensorHandle.
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/dtypes.h"
#include "runtime/graph_memory.h"
#include "runtime/ref.h"
#include "runtime/stream.h"

namespace aotirt {

// Bytes of memory, shared by every tensor that aliases it.
struct Storage : RefCounted {
  enum class Owner {
    Pool,       // from `stream`'s cache (or, adopted, the pool); back there when freed
    Host,       // malloc'd host memory
    Borrowed,   // someone else's; `release(release_ctx)` runs when the last alias goes
                // (for CUDA memory with a stream: once the GPU has also passed
                // every stream that used it, see release_finished_borrowed)
    Graph,      // allocated while a CUDA graph was captured on `stream`: freed in
                // the graph when it goes during the capture, else the graph's
                // (`graph_memory` frees it, see graph_memory.h)
  };

  void* data = nullptr;
  size_t nbytes = 0;
  size_t capacity = 0;  // bytes asked for (Pool: the cache's rounded size)
  int32_t device_type = AOTIRT_DEVICE_CPU;
  int32_t device_index = 0;
  Owner owner = Owner::Borrowed;
  StreamRef stream;
  void (*release)(void*) = nullptr;
  void* release_ctx = nullptr;
  Ref<GraphMemory> graph_memory;  // Owner::Graph only
  // Memory nobody may write through aotirt: an immutable buffer (bytes, a
  // numpy array with writeable=False, a read-only DLPack tensor). Set when
  // the memory is wrapped, shared by every alias, never cleared.
  bool read_only = false;

  ~Storage();

  // Notes that `user` (another stream than `stream`) reads or writes this
  // storage, so that the stream-ordered free waits for it too.
  void record_user(Stream* user);
  // The same rule, for memory that is rewritten rather than freed (a CUDA
  // graph's static outputs, replayed once nobody holds them): orders `next`
  // after every other stream that used the storage, as a stream-ordered
  // free does, then forgets them (what `next` queues from now on runs after
  // their work; a later use records its stream again). No host wait.
  aotirt_status order_users_before(Stream* next);

 private:
  void release_when_streams_pass();
  void release_pool_block();
  void release_graph_allocation();

  std::mutex users_mutex_;
  std::vector<StreamRef> other_users_;
};

using StorageRef = Ref<Storage>;

namespace detail {
extern std::atomic<size_t> pending_borrowed_releases;
void release_finished_borrowed_slow();
}  // namespace detail

// Borrowed CUDA memory goes back to its owner (torch's or CuPy's caching
// allocator, which may hand it out again at once to work on a stream aotirt
// knows nothing of) only once the GPU has finished the work queued, by the
// time the last alias went, on every stream that used it. This runs the
// releases whose work has finished; it never waits. The C API's entry guard
// (entry.h) calls it, never while a core lock is held: a release may take the
// GIL. With none pending (the usual case) it is one atomic load.
inline void release_finished_borrowed() {
  if (detail::pending_borrowed_releases.load(std::memory_order_acquire) != 0) detail::release_finished_borrowed_slow();
}

aotirt_status allocate_storage(size_t nbytes, int32_t device_type, int32_t device_index,
                               const StreamRef& stream, StorageRef* out);

// Checks ndim and the sizes (non-negative, product fits in int64).
aotirt_status check_shape(int64_t ndim, const int64_t* sizes);
void contiguous_strides(int64_t ndim, const int64_t* sizes, int64_t* strides);

}  // namespace aotirt

// The C API's aotirt_tensor and the shims' AtenTensorHandle point to this.
struct AtenTensorOpaque {
  aotirt::StorageRef storage;
  int64_t ndim = 0;
  int64_t sizes[AOTIRT_MAX_DIMS] = {};
  int64_t strides[AOTIRT_MAX_DIMS] = {};  // in elements
  int64_t storage_offset = 0;             // in elements
  int32_t dtype = AOTIRT_DTYPE_FLOAT32;
  // The stream the work that produces this tensor was queued on; copies and
  // consumers order themselves after it. Empty for CPU tensors.
  aotirt::StreamRef stream;

  int64_t numel() const;
  bool is_contiguous() const;
  void* data() const;
  size_t itemsize() const { return aotirt::dtype_itemsize(dtype); }
  // Bytes from the first element's address to one past the furthest element.
  // Requires non-negative strides.
  size_t extent_bytes() const;
  // False when the bytes from the storage's start (offset included) to one
  // past the furthest element do not fit in int64; make_tensor refuses such
  // views, so extent_bytes() cannot overflow on a tensor that exists.
  bool extent_bytes_checked(size_t* out) const;
};

namespace aotirt {
using Tensor = AtenTensorOpaque;

// A new tensor aliasing `storage` with the given view (sizes/strides copied).
aotirt_status make_tensor(StorageRef storage, int64_t ndim, const int64_t* sizes,
                          const int64_t* strides, int64_t storage_offset, int32_t dtype,
                          StreamRef stream, Tensor** out);
// A new handle to the same view and storage as `t`; nullptr when out of memory.
Tensor* alias(const Tensor& t);

// What work queued on `user` owes CUDA tensor `t` before it reads or writes
// it: a wait, on the device, for the stream that produced `t`; and a note on
// the storage that `user` uses the memory, so that its stream-ordered free
// (whichever the owner: pool, borrowed or graph) waits for `user` as well.
// No host wait.
aotirt_status use_on(const Tensor& t, Stream* user);

// The input aliases handed to a model for a run, until the run returns. A
// model steals its inputs (deletes them), but one that fails before taking
// them (torch's generated input checks run first) leaves them alive: the run
// then deletes those, and only those. aoti_torch_delete_tensor_object calls
// forget_input_alias for every tensor it deletes while any run is in flight.
void register_input_aliases(Tensor* const* aliases, size_t n);
// The aliases of `aliases` nobody deleted, forgotten either way; `left`
// receives them (may be null).
void settle_input_aliases(Tensor* const* aliases, size_t n, std::vector<Tensor*>* left);
void forget_input_alias(Tensor* t);
bool input_aliases_in_flight();

// AOTIRT_ERROR_VALUE when `t` wraps read-only memory: `what` names the
// write ("copy_: the destination"), the message adds the tensor.
aotirt_status check_writable(const Tensor& t, const std::string& what);

// For messages: "float32 [2, 3]" (the dtype and the sizes), and "cpu" or
// "cuda:N".
std::string dtype_and_shape(const Tensor& t);
std::string device_text(const Tensor& t);
// The same dtype and sizes (the strides may differ).
bool same_dtype_and_sizes(const Tensor& a, const Tensor& b);
}  // namespace aotirt
