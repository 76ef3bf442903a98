#include "runtime/tensor.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>

#include "runtime/errors.h"

namespace aotirt {
namespace {

// Borrowed device memory whose owner is told only once the GPU has passed
// `done` on every stream that used it.
struct PendingRelease {
  void (*release)(void*);
  void* release_ctx;
  std::vector<cudaEvent_t> done;
};

std::mutex pending_mutex;

// Never destroyed: releases left at exit must not run after the interpreter
// (whose objects they would drop) is gone.
std::vector<PendingRelease>& pending_releases() {
  static auto* pending = new std::vector<PendingRelease>();
  return *pending;
}

// Records an event on `stream` (any device), silently: this runs in
// destructors.
bool record_done(const Stream& stream, std::vector<cudaEvent_t>* events) {
  cudaEvent_t event = record_event_quietly(stream);
  if (event) events->push_back(event);
  return event != nullptr;
}

}  // namespace

namespace detail {
std::atomic<size_t> pending_borrowed_releases{0};
}  // namespace detail
using detail::pending_borrowed_releases;

void Storage::release_when_streams_pass() {
  if (data == nullptr || nbytes == 0) {
    release(release_ctx);  // no bytes: nothing any stream could still read
    return;
  }
  std::vector<cudaEvent_t> done;
  bool recorded = record_done(*stream, &done);
  {
    std::lock_guard<std::mutex> lock(users_mutex_);
    for (const StreamRef& user : other_users_) recorded = recorded && record_done(*user, &done);
  }
  if (!recorded) {
    // CUDA could not record an event: then the context is broken and no
    // queued work will read the memory again.
    (void)cudaGetLastError();
    for (cudaEvent_t event : done) cudaEventDestroy(event);
    release(release_ctx);
    return;
  }
  std::lock_guard<std::mutex> lock(pending_mutex);
  pending_releases().push_back({release, release_ctx, std::move(done)});
  pending_borrowed_releases.store(pending_releases().size(), std::memory_order_release);
}

void detail::release_finished_borrowed_slow() {
  std::vector<PendingRelease> finished;
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    std::vector<PendingRelease>& pending = pending_releases();
    size_t kept = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      bool passed = true;
      for (cudaEvent_t event : pending[i].done) {
        cudaError_t state = poll_event(event);
        if (state == cudaErrorNotReady) {
          passed = false;
          break;
        }
        // An error (a fault in earlier work) also means nothing will read the
        // memory any more.
        if (state != cudaSuccess) (void)cudaGetLastError();
      }
      if (passed)
        finished.push_back(std::move(pending[i]));
      else
        pending[kept++] = std::move(pending[i]);
    }
    pending.resize(kept);
    pending_borrowed_releases.store(kept, std::memory_order_release);
  }
  // Outside the lock: a release may take the GIL, and another thread holding
  // the GIL may be waiting for this lock.
  for (PendingRelease& r : finished) {
    for (cudaEvent_t event : r.done) cudaEventDestroy(event);
    r.release(r.release_ctx);
  }
}

Storage::~Storage() {
  if (owner == Owner::Pool) {
    if (data) release_pool_block();
  } else if (owner == Owner::Graph) {
    if (data) release_graph_allocation();
  } else if (owner == Owner::Host) {
    std::free(data);
  } else if (release) {
    if (device_type == AOTIRT_DEVICE_CUDA && stream)
      release_when_streams_pass();
    else
      release(release_ctx);
  }
}

void Storage::release_pool_block() {
  if (CaptureState* capture = capture_on_this_thread()) {
    // Let go while this thread captures a CUDA graph: the graph may read the
    // memory at every launch, and cannot free memory it did not allocate. It
    // keeps the block until it is gone (graph_memory.h).
    capture->memory()->keep(data, stream, std::move(other_users_));
    return;
  }
  // Every other stream that used the memory must be done with it before
  // the pool hands it out again; the waits are on the device, not here.
  for (const StreamRef& user : other_users_) user->order_before_quietly(stream.get());
  // Kept for the stream's next allocation, else back to the pool. Errors
  // cannot be reported from a destructor; after a sticky CUDA error the
  // context, and this memory with it, is gone.
  stream->recycle_block(data);
}

void Storage::release_graph_allocation() {
  if (stream->capture.load(std::memory_order_acquire)) {
    // Let go during the capture that allocated it: a free node of the graph.
    // (After a failed capture the call fails; the graph is discarded anyway.)
    (void)cudaFreeAsync(data, stream->handle);
    graph_memory->freed(data);
    return;
  }
  // The graph's memory: freed and allocated again by each launch, and freed
  // for good by graph_memory once the graph and this storage are gone, on the
  // launch stream, which must first wait for the other streams that used it.
  for (const StreamRef& user : other_users_) user->order_before_quietly(graph_memory->launch_stream());
}

aotirt_status Storage::order_users_before(Stream* next) {
  std::lock_guard<std::mutex> lock(users_mutex_);
  // Forgotten only once all are ordered: after a failure none is lost.
  for (const StreamRef& user : other_users_) AOTIRT_TRY(user->order_before(next));
  other_users_.clear();
  return AOTIRT_OK;
}

void Storage::record_user(Stream* user) {
  std::lock_guard<std::mutex> lock(users_mutex_);
  for (const StreamRef& known : other_users_)
    if (known.get() == user) return;
  other_users_.push_back(StreamRef::share(user));
}

namespace {

// A CUDA graph is being captured on the storage's stream: the allocation
// becomes an allocation node of the graph, at an address fixed for the
// graph's life. Never from the stream's cache, whose blocks eager work
// shares; and no pool configuration, which is not work a capture may do.
aotirt_status allocate_in_graph(Storage& storage, CaptureState& capture) {
  Stream& stream = *storage.stream;
  storage.capacity = storage.nbytes;
  cudaError_t err = cudaMallocAsync(&storage.data, storage.nbytes, stream.handle);
  if (err != cudaSuccess) {
    storage.data = nullptr;
    return fail_cuda(err, "cudaMallocAsync(" + std::to_string(storage.nbytes) + " bytes) while capturing a CUDA graph");
  }
  storage.owner = Storage::Owner::Graph;
  storage.graph_memory = capture.memory();
  storage.graph_memory->allocated(storage.data, storage.nbytes);
  return AOTIRT_OK;
}

// Device memory for eager work on `storage.stream`: from its cache, which
// takes a segment from the pool on a miss (block_cache.h says why segments).
// Out of memory, the cache's free segments go back to the pool and the
// segment is asked for again, then only the request itself. A stream with
// no cache (adopted) takes each tensor from the pool.
aotirt_status allocate_from_pool(Storage& storage) {
  Stream& stream = *storage.stream;
  const int device = storage.device_index;
  BlockCache* cache = stream.cache();
  storage.capacity = cache ? BlockCache::round_up(storage.nbytes) : storage.nbytes;
  if (cache && (storage.data = cache->take(storage.capacity))) return AOTIRT_OK;
  AOTIRT_TRY(configure_pool(device));
  // The device current only here, past the cache: a hit never touches the
  // thread's current device, which may be one this process has not used.
  DeviceGuard guard;
  AOTIRT_TRY(guard.enter(device));
  const size_t segment_bytes = cache ? BlockCache::segment_size_for(storage.capacity) : storage.capacity;
  void* segment = nullptr;
  size_t got_bytes = segment_bytes;
  cudaError_t err = cudaMallocAsync(&segment, segment_bytes, stream.handle);
  if (err == cudaErrorMemoryAllocation && cache) {
    // Free segments this stream keeps may be what is missing; and a
    // segment larger than the request may not fit where the request does.
    (void)cudaGetLastError();
    stream.release_cached_blocks();
    err = cudaMallocAsync(&segment, segment_bytes, stream.handle);
    if (err == cudaErrorMemoryAllocation && segment_bytes > storage.capacity) {
      (void)cudaGetLastError();
      got_bytes = storage.capacity;
      err = cudaMallocAsync(&segment, got_bytes, stream.handle);
    }
  }
  if (err != cudaSuccess) {
    storage.data = nullptr;
    return fail_cuda(err, "cudaMallocAsync(" + std::to_string(got_bytes) + " bytes, for a tensor of " +
                              std::to_string(storage.nbytes) + " bytes) on cuda:" + std::to_string(device));
  }
  storage.data = cache ? cache->take_from_new_segment(segment, got_bytes, storage.capacity) : segment;
  return AOTIRT_OK;
}

}  // namespace

aotirt_status allocate_storage(size_t nbytes, int32_t device_type, int32_t device_index,
                               const StreamRef& stream, StorageRef* out) {
  auto storage = StorageRef::adopt(new (std::nothrow) Storage());
  if (!storage) return fail(AOTIRT_ERROR_MEMORY, "out of host memory for a tensor storage");
  storage->nbytes = nbytes;
  storage->device_type = device_type;
  storage->device_index = device_index;
  if (device_type == AOTIRT_DEVICE_CUDA) {
    storage->owner = Storage::Owner::Pool;
    storage->stream = stream;
    AOTIRT_TRY(check_device_usable(device_index));
    CaptureState* capture = stream->capture.load(std::memory_order_acquire);
    if (nbytes > 0 && capture) {
      AOTIRT_TRY(allocate_in_graph(*storage, *capture));
    } else if (nbytes > 0) {
      AOTIRT_TRY(allocate_from_pool(*storage));
    }
  } else {
    storage->owner = Storage::Owner::Host;
    if (nbytes > 0) {
      // 64-byte alignment keeps vectorised CPU kernels on their fast path.
      size_t rounded = (nbytes + 63) / 64 * 64;
      storage->data = std::aligned_alloc(64, rounded);
      if (!storage->data)
        return fail(AOTIRT_ERROR_MEMORY, "out of host memory: could not allocate " +
                                             std::to_string(nbytes) + " bytes");
    }
  }
  *out = std::move(storage);
  return AOTIRT_OK;
}

aotirt_status check_shape(int64_t ndim, const int64_t* sizes) {
  if (ndim < 0 || ndim > AOTIRT_MAX_DIMS)
    return fail(AOTIRT_ERROR_VALUE, "tensors have 0 to " + std::to_string(AOTIRT_MAX_DIMS) +
                                        " dimensions, got " + std::to_string(ndim));
  int64_t numel = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] < 0)
      return fail(AOTIRT_ERROR_VALUE, "size of dimension " + std::to_string(d) +
                                          " is negative (" + std::to_string(sizes[d]) + ")");
    if (sizes[d] > 0 && numel > std::numeric_limits<int64_t>::max() / sizes[d])
      return fail(AOTIRT_ERROR_VALUE, "shape has more elements than fit in int64");
    numel *= sizes[d];
  }
  return AOTIRT_OK;
}

void contiguous_strides(int64_t ndim, const int64_t* sizes, int64_t* strides) {
  int64_t stride = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= sizes[d] > 1 ? sizes[d] : 1;
  }
}

aotirt_status make_tensor(StorageRef storage, int64_t ndim, const int64_t* sizes,
                          const int64_t* strides, int64_t storage_offset, int32_t dtype,
                          StreamRef stream, Tensor** out) {
  AOTIRT_TRY(check_shape(ndim, sizes));
  AOTIRT_TRY(check_dtype(dtype));
  auto* t = new (std::nothrow) Tensor();
  if (!t) return fail(AOTIRT_ERROR_MEMORY, "out of host memory for a tensor");
  t->storage = std::move(storage);
  t->ndim = ndim;
  for (int64_t d = 0; d < ndim; ++d) t->sizes[d] = sizes[d];
  if (strides) {
    for (int64_t d = 0; d < ndim; ++d) t->strides[d] = strides[d];
  } else {
    contiguous_strides(ndim, sizes, t->strides);
  }
  t->storage_offset = storage_offset;
  t->dtype = dtype;
  t->stream = std::move(stream);
  size_t extent = 0;
  if (storage_offset < 0 || !t->extent_bytes_checked(&extent)) {
    delete t;
    return fail(AOTIRT_ERROR_VALUE, storage_offset < 0 ? "the tensor's storage offset is negative"
                                                       : "the tensor's sizes and strides span more bytes than fit "
                                                         "in int64");
  }
  *out = t;
  return AOTIRT_OK;
}

Tensor* alias(const Tensor& t) { return new (std::nothrow) Tensor(t); }

aotirt_status use_on(const Tensor& t, Stream* user) {
  if (t.stream) AOTIRT_TRY(t.stream->order_before(user));  // nothing to do on the same stream
  // Checked against the storage's stream, not the tensor's: a view may have
  // moved to `user` (its producer) while the memory is still freed on the
  // stream it was allocated on. A storage with no stream (host memory, a
  // model's own blob) is never freed stream-ordered: nothing to note.
  Storage& storage = *t.storage;
  if (storage.stream && storage.stream->handle != user->handle) storage.record_user(user);
  return AOTIRT_OK;
}

namespace {
std::mutex ledger_mutex;
std::atomic<size_t> ledger_count{0};
std::vector<Tensor*>& ledger() {
  static auto* aliases = new std::vector<Tensor*>();  // never destroyed: deletes may come at exit
  return *aliases;
}
}  // namespace

void register_input_aliases(Tensor* const* aliases, size_t n) {
  std::lock_guard<std::mutex> lock(ledger_mutex);
  ledger().insert(ledger().end(), aliases, aliases + n);
  ledger_count.store(ledger().size(), std::memory_order_release);
}

void settle_input_aliases(Tensor* const* aliases, size_t n, std::vector<Tensor*>* left) {
  std::lock_guard<std::mutex> lock(ledger_mutex);
  std::vector<Tensor*>& all = ledger();
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = all.size(); j-- > 0;) {
      if (all[j] != aliases[i]) continue;
      if (left) left->push_back(aliases[i]);
      all[j] = all.back();
      all.pop_back();
      break;
    }
  }
  ledger_count.store(all.size(), std::memory_order_release);
}

void forget_input_alias(Tensor* t) {
  std::lock_guard<std::mutex> lock(ledger_mutex);
  std::vector<Tensor*>& all = ledger();
  for (size_t j = all.size(); j-- > 0;) {
    if (all[j] != t) continue;
    all[j] = all.back();
    all.pop_back();
    break;
  }
  ledger_count.store(all.size(), std::memory_order_release);
}

bool input_aliases_in_flight() { return ledger_count.load(std::memory_order_acquire) != 0; }

aotirt_status check_writable(const Tensor& t, const std::string& what) {
  if (!t.storage || !t.storage->read_only) return AOTIRT_OK;
  return fail(AOTIRT_ERROR_VALUE, what + " (" + dtype_and_shape(t) + " on " + device_text(t) +
                                      ") wraps read-only memory, which aotirt never writes: copy it into a "
                                      "writable tensor first");
}

std::string dtype_and_shape(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype)) + " [";
  for (int64_t d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.sizes[d]);
  return s + "]";
}

std::string device_text(const Tensor& t) {
  return t.storage->device_type == AOTIRT_DEVICE_CPU ? std::string("cpu")
                                                     : "cuda:" + std::to_string(t.storage->device_index);
}

bool same_dtype_and_sizes(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int64_t d = 0; d < a.ndim; ++d)
    if (a.sizes[d] != b.sizes[d]) return false;
  return true;
}

}  // namespace aotirt

int64_t AtenTensorOpaque::numel() const {
  int64_t n = 1;
  for (int64_t d = 0; d < ndim; ++d) n *= sizes[d];
  return n;
}

bool AtenTensorOpaque::is_contiguous() const {
  if (numel() == 0) return true;  // nothing to lay out (torch agrees)
  int64_t expected = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;  // a size-1 dimension's stride never matters
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

void* AtenTensorOpaque::data() const {
  if (!storage || !storage->data) return nullptr;
  return static_cast<char*>(storage->data) + storage_offset * static_cast<int64_t>(itemsize());
}

bool AtenTensorOpaque::extent_bytes_checked(size_t* out) const {
  *out = 0;
  if (numel() == 0) return true;
  int64_t last = storage_offset;
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t step = 0;
    if (strides[d] <= 0) continue;  // only reaches below the first element
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || __builtin_add_overflow(last, step, &last))
      return false;
  }
  int64_t bytes = 0;
  if (__builtin_add_overflow(last, int64_t{1}, &last) ||
      __builtin_mul_overflow(last, static_cast<int64_t>(itemsize()), &bytes))
    return false;
  *out = static_cast<size_t>(bytes);
  return true;
}

size_t AtenTensorOpaque::extent_bytes() const {
  if (numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < ndim; ++d) last += (sizes[d] - 1) * strides[d];
  return static_cast<size_t>(last + 1) * itemsize();
}
