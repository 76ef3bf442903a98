// The diagnostics shims (include/aotirt/shim.h): warnings and checks from
// model code, and the grad-mode flag.

#include "aotirt/shim.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "runtime/errors.h"

namespace {

thread_local bool grad_mode_enabled = false;

}  // namespace

extern "C" {

// Inference never records autograd history; the flag only has to round-trip.
bool aoti_torch_grad_mode_is_enabled(void) { return grad_mode_enabled; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { grad_mode_enabled = enabled; }

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(stderr, "aotirt: warning from model code (%s at %s:%u): %s\n", func ? func : "?",
               file ? file : "?", line, msg ? msg : "");
}

void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (cond) return;
  std::string message = std::string(msg ? msg : "check failed") + " (" + (func ? func : "?") + " at " +
                        (file ? file : "?") + ":" + std::to_string(line) + ")";
  aotirt::fail(AOTIRT_ERROR_AOTI, message);
  // torch's aoti_torch_check throws too: generated code relies on not
  // continuing past a failed check, and catches at its run entry point.
  throw std::runtime_error(message);
}

}  // extern "C"
