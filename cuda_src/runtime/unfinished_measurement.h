// Whether the last run left a measurement of the opt-in tuning unfinished.
//
// The cuDNN tuning (AOTIRT_CUDNN_TUNE, shims/libs/cudnn_measure.h) queues a
// shape's measurement in its first eager call and chooses in a later one
// that finds it done; the host never waits for it. A CUDA graph captured
// before then would keep the untuned engine for good: a replay calls no
// shim, so the measurement would never be read, nor its choice recorded.
// So a shim that leaves a measurement unfinished says so here, and
// automatic graphs (AutoGraphs::run) keep running a signature's calls
// eagerly while the last one did. Those are the caller's own calls, not
// extra work: the host goes on queueing them until the GPU has done the
// measurement (behind the calls queued before it: up to a few hundred
// milliseconds of GPU time for a model of many convolutions). An explicit
// capture (aotirt_graph) does not wait: its warm-up runs are the caller's
// to choose.
//
// Per thread: a run's shims run on the thread that called it, and another
// thread's runs say nothing about this one's.
#pragma once

#include <cstdint>

namespace aotirt {

// The eager calls of a signature, past kEagerRunsBeforeCapture, that wait
// for the tuning's measurements before automatic graphs capture it anyway:
// a bound for a measurement that never ends (none should), far above what
// one takes.
constexpr uint64_t kMostRunsAwaitingMeasurement = 100000;

// Said by a shim whose call left a measurement in flight.
void note_unfinished_measurement();

// Whether a call on this thread said so since the last take; clears it.
bool take_unfinished_measurement();

}  // namespace aotirt
