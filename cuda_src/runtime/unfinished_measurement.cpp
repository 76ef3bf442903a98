#include "runtime/unfinished_measurement.h"

namespace aotirt {
namespace {

thread_local bool unfinished = false;

}  // namespace

void note_unfinished_measurement() { unfinished = true; }

bool take_unfinished_measurement() {
  const bool was = unfinished;
  unfinished = false;
  return was;
}

}  // namespace aotirt
