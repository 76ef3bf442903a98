// Knob types between cuDNN's plan names and cudnn-frontend's calls.
//
// A plan's name (cudnn-frontend's engine tag, what the tuning's choices'
// file records and tuning::parse_tag reads) numbers each knob as cuDNN's
// backend does: "eng67_k13=0" sets cudnnBackendKnobType_t 13, TILEK. The
// frontend's calls that list an engine's knobs (get_knobs_for_engine) and
// build a configuration from knobs (create_execution_plan) speak its own
// KnobType_t, numbered differently (its TILEK is 6: its knobs.h says the
// numbers need not match). Taking one for the other builds configurations
// nobody asked for, which cuDNN then refuses, so the wide mode measured
// nothing beyond the list on the H200 until every knob crossed here.
#pragma once

#if defined(AOTIRT_HAVE_CUDNN)

#include <cudnn_frontend.h>

#include <cstdint>
#include <unordered_map>

#include "shims/libs/cudnn_tuning.h"

// The converters are cudnn-frontend 1.32's (knobs.h), as is appending a
// configuration to a heuristics list at all (cudnn_configs.h).
#if CUDNN_FRONTEND_VERSION >= 13200

namespace aotirt {
namespace cudnn {
namespace knobs {

namespace fe = cudnn_frontend;

// The frontend's type for the backend's `backend_type`; false for one it
// has no word for (a deprecated type, or one newer than these headers).
inline bool to_frontend(int64_t backend_type, fe::KnobType_t* out) {
  if (backend_type < 0 || backend_type >= static_cast<int64_t>(CUDNN_KNOB_TYPE_COUNTS)) return false;
  *out = fe::convert_from_backend_knob_type(static_cast<cudnnBackendKnobType_t>(backend_type));
  return *out != fe::KnobType_t::NOT_SET;
}

// The backend's type for the frontend's `type`; false for a frontend-only
// knob (one the backend's engines do not take).
inline bool to_backend(fe::KnobType_t type, int64_t* out) {
  cudnnBackendKnobType_t backend = CUDNN_KNOB_TYPE_COUNTS;
  if (fe::convert_to_backend_knob_type(type, backend) != CUDNN_STATUS_SUCCESS) return false;
  *out = static_cast<int64_t>(backend);
  return true;
}

// `config`'s knobs as create_execution_plan takes them; false where one
// has no frontend type (the configuration cannot be built from its name).
inline bool frontend_knobs(const tuning::EngineConfig& config, std::unordered_map<fe::KnobType_t, int64_t>* out) {
  out->clear();
  for (const auto& [type, value] : config.knobs) {
    fe::KnobType_t frontend_type = fe::KnobType_t::NOT_SET;
    if (!to_frontend(type, &frontend_type)) return false;
    (*out)[frontend_type] = value;
  }
  return true;
}

}  // namespace knobs
}  // namespace cudnn
}  // namespace aotirt

#endif  // CUDNN_FRONTEND_VERSION >= 13200
#endif  // AOTIRT_HAVE_CUDNN
