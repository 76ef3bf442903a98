// The one guard of the C API's entry points (include/aotirt/aotirt.h): each
// opens with
//
//   AOTIRT_ENTRY();                 the borrowed-memory poll, on the way in
//   AOTIRT_ENTRY_POLL_ON_EXIT();    on the way in and again on the way out
//
// The poll (release_finished_borrowed, tensor.h) hands borrowed CUDA memory
// back to its owner once the GPU has passed its last use: it is checked,
// never waited for, at the next aotirt call on any thread, at the edge of the
// call, where no core lock is held (a release may take the GIL). An entry
// point whose own work can let such memory go or see the GPU pass it (a free,
// the copy routine's wait) polls on the way out too.
//
// Every entry point opens with one of the two, but for the last-error getters
// (errors.cpp), whose poll could run an owner's release that calls aotirt and
// replaces the error being read, and the lookups in constant tables (dtypes,
// shims), which touch no object. tests/runtime/test_entry_guard.py checks it.
#pragma once

#include "runtime/tensor.h"

namespace aotirt {

class Entry {
 public:
  enum class Exit { Quiet, Poll };
  explicit Entry(Exit exit = Exit::Quiet) : poll_on_exit_(exit == Exit::Poll) { release_finished_borrowed(); }
  ~Entry() {
    if (poll_on_exit_) release_finished_borrowed();
  }
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

 private:
  bool poll_on_exit_;
};

}  // namespace aotirt

#define AOTIRT_ENTRY() ::aotirt::Entry aotirt_entry_
#define AOTIRT_ENTRY_POLL_ON_EXIT() ::aotirt::Entry aotirt_entry_(::aotirt::Entry::Exit::Poll)
