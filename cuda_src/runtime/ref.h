// A minimal intrusive reference-counted pointer.
//
// Streams and storages are shared between C callers (which hold raw pointers
// and call retain/release) and C++ code; an intrusive count lets both hold the
// same object without a separate control block.
#pragma once

#include <atomic>
#include <utility>

namespace aotirt {

// Base for reference-counted objects: starts at one reference.
class RefCounted {
 public:
  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // Takes a reference only if the object is still alive (for registries that
  // hold a pointer without a reference).
  bool try_add_ref() noexcept {
    int n = refs_.load(std::memory_order_relaxed);
    while (n > 0) {
      if (refs_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  // Returns true when this was the last reference.
  bool drop_ref() noexcept { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  // The references now. Another thread may add or drop one right after, so
  // this is exact only for an owner that knows every reference it holds and
  // that nobody else can take one meanwhile (a reference is only ever copied
  // from another: when the count equals the owner's own, nobody else has one
  // to copy). Acquire: a holder's writes before its drop_ref are visible.
  int ref_count() const noexcept { return refs_.load(std::memory_order_acquire); }

 private:
  std::atomic<int> refs_{1};
};

template <typename T>
class Ref {
 public:
  Ref() = default;
  // Adopts one existing reference.
  static Ref adopt(T* p) noexcept { Ref r; r.p_ = p; return r; }
  // Takes a new reference.
  static Ref share(T* p) noexcept { if (p) p->add_ref(); return adopt(p); }

  Ref(const Ref& o) noexcept : p_(o.p_) { if (p_) p_->add_ref(); }
  Ref(Ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref& operator=(Ref o) noexcept { std::swap(p_, o.p_); return *this; }
  ~Ref() { reset(); }

  void reset() noexcept {
    if (p_ && p_->drop_ref()) delete p_;
    p_ = nullptr;
  }
  // Gives up ownership without releasing.
  T* leak() noexcept { return std::exchange(p_, nullptr); }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

}  // namespace aotirt
