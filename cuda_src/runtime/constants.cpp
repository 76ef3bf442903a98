#include "runtime/constants.h"

#include <algorithm>
#include <utility>

#include "runtime/copy.h"
#include "runtime/dtypes.h"
#include "runtime/errors.h"

namespace aotirt {
namespace {

std::string shape_text(const int64_t* sizes, size_t ndim) {
  std::string text = "[";
  for (size_t d = 0; d < ndim; ++d) text += (d ? ", " : "") + std::to_string(sizes[d]);
  return text + "]";
}

std::string label(const ConstantInfo& info) {
  if (info.fqn.empty() || info.fqn == info.name) return "'" + info.name + "'";
  return "'" + info.fqn + "' (the library's " + info.name + ")";
}

// Why `value` cannot be constant `info`, or "".
std::string mismatch(const ConstantInfo& info, const Tensor& value, int32_t device_type, int32_t device_index) {
  if (info.dtype >= 0 && value.dtype != info.dtype)
    return std::string("the model's is ") + dtype_name(info.dtype) + ", the new value is " + dtype_name(value.dtype);
  const std::string given = shape_text(value.sizes, static_cast<size_t>(value.ndim));
  if (info.shape_known) {
    bool same = static_cast<size_t>(value.ndim) == info.sizes.size() &&
                std::equal(info.sizes.begin(), info.sizes.end(), value.sizes);
    if (!same) return "the model's shape is " + shape_text(info.sizes.data(), info.sizes.size()) + ", the new value's " + given;
  } else {
    // torch's CPU libraries give each constant's size rounded up to 64 bytes.
    const uint64_t needed = static_cast<uint64_t>(value.numel()) * value.itemsize();
    if (needed > info.bytes || info.bytes - needed >= 64)
      return "the model's holds " + std::to_string(info.bytes) + " bytes, the new value (" + given + ") " +
             std::to_string(needed);
  }
  const Storage& storage = *value.storage;
  if (storage.device_type == AOTIRT_DEVICE_CUDA &&
      (device_type != AOTIRT_DEVICE_CUDA || storage.device_index != device_index))
    return "the new value is on cuda:" + std::to_string(storage.device_index) + ", the model on " +
           (device_type == AOTIRT_DEVICE_CPU ? std::string("cpu") : "cuda:" + std::to_string(device_index)) +
           " (host values are copied to the model's device; values on another GPU are not)";
  return "";
}

// A new tensor of the model's layout for `info` (its strides when known,
// else contiguous) on the model's device, with `value` copied in on `stream`.
aotirt_status copy_for_model(const ConstantInfo& info, const Tensor& value, const ConstantsContext& ctx, Tensor** out) {
  std::vector<int64_t> strides(static_cast<size_t>(value.ndim));
  if (info.shape_known && info.strides.size() == strides.size())
    strides = info.strides;
  else
    contiguous_strides(value.ndim, value.sizes, strides.data());
  size_t extent = value.numel() > 0 ? value.itemsize() : 0;
  for (size_t d = 0; d < strides.size(); ++d)
    if (value.sizes[d] > 0) extent += static_cast<size_t>(value.sizes[d] - 1) * strides[d] * value.itemsize();
  StreamRef stream = ctx.stream ? StreamRef::share(ctx.stream) : StreamRef();
  StorageRef storage;
  AOTIRT_TRY(allocate_storage(std::max<size_t>(extent, 1), ctx.device_type, ctx.device_index, stream, &storage));
  Tensor* copy = nullptr;
  AOTIRT_TRY(make_tensor(std::move(storage), value.ndim, value.sizes, strides.data(), 0, value.dtype, stream, &copy));
  aotirt_status status = AOTIRT_OK;
  if (ctx.device_type == AOTIRT_DEVICE_CPU)
    copy_host_to_host(*copy, value);
  else
    status = copy_between(*copy, value, ctx.stream);
  if (status != AOTIRT_OK) {
    delete copy;
    return status;
  }
  *out = copy;
  return AOTIRT_OK;
}

// `value` kept as it is (a shared weights set, or an upload made for this
// update): an alias, ordered on the model's stream after its producer.
aotirt_status share_for_model(const Tensor& value, const ConstantsContext& ctx, Tensor** out) {
  if (ctx.stream) AOTIRT_TRY(use_on(value, ctx.stream));
  Tensor* kept = alias(value);
  if (!kept) return fail(AOTIRT_ERROR_MEMORY, "out of host memory");
  *out = kept;
  return AOTIRT_OK;
}

// A value can be kept without a copy when it already is what the model reads:
// on its device, in its layout. A buffer never is: a model may write its
// buffers, and a shared one would be written for every handle.
bool can_share(const ConstantInfo& info, const Tensor& value, const ConstantsContext& ctx) {
  if (info.kind == kConstantBuffer || value.storage->read_only) return false;
  if (value.storage->device_type != ctx.device_type || value.storage->device_index != ctx.device_index) return false;
  if (info.shape_known && info.strides.size() == static_cast<size_t>(value.ndim))
    return std::equal(info.strides.begin(), info.strides.end(), value.strides) || value.numel() <= 1;
  return value.is_contiguous();
}

}  // namespace

ConstantTable::~ConstantTable() {
  release(sides_[0]);
  release(sides_[1]);
  for (Tensor* t : retired_) delete t;
}

void ConstantTable::release(Side& side) {
  // Each free is stream-ordered: work already queued that reads the
  // value finishes first.
  for (Tensor*& t : side.values) {
    delete t;
    t = nullptr;
  }
}

void ConstantTable::read(const ContainerApi& api, AOTInductorModelContainerHandle container, bool loaded) {
  size_t count = 0;
  if (!api.num_constants || api.num_constants(container, &count) != 0) count = 0;
  infos_.assign(count, ConstantInfo());
  for (size_t i = 0; i < count; ++i) {
    ConstantInfo& info = infos_[i];
    const char* text = nullptr;
    if (api.constant_name && api.constant_name(container, i, &text) == 0 && text) info.name = text;
    text = nullptr;
    if (api.constant_fqn && api.constant_fqn(container, i, &text) == 0 && text) info.fqn = text;
    int32_t value = 0;
    if (api.constant_dtype && api.constant_dtype(container, i, &value) == 0) info.dtype = value;
    if (api.constant_type && api.constant_type(container, i, &value) == 0) info.kind = value;
    size_t bytes = 0;
    if (api.constant_data_size && api.constant_data_size(container, i, &bytes) == 0) info.bytes = bytes;
    bool folded = false;
    if (api.constant_from_folded && api.constant_from_folded(container, i, &folded) == 0) info.folded = folded;
    if (info.kind == kConstantFolded) info.folded = true;
    if (!info.name.empty()) index_.emplace(info.name, i);
    if (!info.fqn.empty()) index_.emplace(info.fqn, i);
  }
  for (Side& side : sides_) side.values.assign(count, nullptr);
  // A library that lists its loaded tensors says itself whether every
  // parameter has one (the example models' do not until a blob or an update
  // fills them, and nothing else tells).
  if (loaded && learn_shapes(api, container) < required_count()) loaded = false;
  sides_[active_].complete = loaded;
  clear_error();
}

size_t ConstantTable::required_count() const {
  size_t n = 0;
  for (const ConstantInfo& info : infos_) n += info.required() ? 1 : 0;
  return n;
}

void ConstantTable::library_loaded(const ContainerApi& api, AOTInductorModelContainerHandle container) {
  release(sides_[active_]);
  sides_[active_].complete = true;
  learn_shapes(api, container);
  clear_error();
}

size_t ConstantTable::learn_shapes(const ContainerApi& api, AOTInductorModelContainerHandle container) {
  // torch 2.11's only way to the loaded tensors: its map, keyed by FQN (the
  // library is built with the same libstdc++ ABI, as torch's runner assumes).
  // Without one, what the caller says is believed: all required ones.
  if (!api.extract_constants_map) return required_count();
  std::unordered_map<std::string, AtenTensorHandle> map;
  if (api.extract_constants_map(container, reinterpret_cast<AOTInductorConstantMapHandle>(&map), false) != 0)
    return required_count();
  size_t required_found = 0;
  for (ConstantInfo& info : infos_) {
    auto it = map.find(info.fqn.empty() ? info.name : info.fqn);
    if (it == map.end() || !it->second) continue;
    const Tensor& t = *it->second;
    info.sizes.assign(t.sizes, t.sizes + t.ndim);
    info.strides.assign(t.strides, t.strides + t.ndim);
    info.shape_known = true;
    required_found += info.required() ? 1 : 0;
  }
  return required_found;
}

const Tensor* ConstantTable::active_value(size_t i) const {
  return i < infos_.size() ? sides_[active_].values[i] : nullptr;
}

aotirt_status ConstantTable::supported(const ConstantsContext& ctx, bool swap) const {
  const ContainerApi& api = ctx.api;
  std::string missing;
  auto need = [&](const void* fn, const char* name) {
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need(reinterpret_cast<const void*>(api.constant_name), "AOTInductorModelContainerGetConstantName");
  if (swap) {
    need(reinterpret_cast<const void*>(api.swap_constants), "AOTInductorModelContainerSwapConstantBuffer");
  } else {
    need(reinterpret_cast<const void*>(api.constant_dtype), "AOTInductorModelContainerGetConstantDtype");
    need(reinterpret_cast<const void*>(api.constant_data_size), "AOTInductorModelContainerGetConstantDataSize");
    need(reinterpret_cast<const void*>(api.update_user_managed),
         "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs");
  }
  if (!missing.empty())
    return fail(AOTIRT_ERROR_AOTI, ctx.path + " cannot " + (swap ? "swap" : "replace") +
                                       " its constants by name: it does not export " + missing +
                                       " (torch 2.11's libraries do; its weights can only come from a blob)");
  return AOTIRT_OK;
}

aotirt_status ConstantTable::update(const ConstantsContext& ctx, const char* const* keys, Tensor* const* values,
                                    const int* share, size_t n, bool inactive) {
  AOTIRT_TRY(supported(ctx, false));
  const int target = inactive ? 1 - active_ : active_;
  // 1. Every check before anything is made or changed.
  std::vector<Tensor*> given(infos_.size(), nullptr);
  std::vector<size_t> given_at(infos_.size(), 0);
  std::string problems;
  size_t count = 0;
  bool unknown = false;
  auto problem = [&](const std::string& text) {
    problems += (count++ ? "; " : "") + text;
  };
  for (size_t k = 0; k < n; ++k) {
    const std::string key = keys[k] ? keys[k] : "";
    auto it = index_.find(key);
    if (it == index_.end()) {
      problem("'" + key + "' is not a constant of the model");
      unknown = true;
      continue;
    }
    const ConstantInfo& info = infos_[it->second];
    if (info.folded) {
      problem(label(info) + " is made by constant folding, from other constants: it cannot be given");
    } else if (given[it->second]) {
      problem(label(info) + " is given twice (by its name and its FQN)");
    } else if (!values[k] || !values[k]->storage) {
      problem(label(info) + " has no value");
    } else {
      std::string why = mismatch(info, *values[k], ctx.device_type, ctx.device_index);
      if (!why.empty()) problem(label(info) + ": " + why);
      given[it->second] = values[k];
      given_at[it->second] = k;
    }
  }
  // Left out: only what the target buffer (or, for the second one, the
  // active buffer, copied) already has a value for, and never a parameter.
  const bool kept_available = sides_[active_].complete;
  std::string missing;
  size_t missing_count = 0;
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ConstantInfo& info = infos_[i];
    if (info.folded || given[i]) continue;
    if (info.required() || !kept_available) {
      missing += (missing_count++ ? ", " : "") + label(info);
    }
  }
  if (missing_count)
    problem(std::to_string(missing_count) + " constant(s) of the model are missing: " + missing +
            (kept_available ? " (only buffers and tensor constants may be left out)"
                            : " (the model holds no weights yet: every constant must be given)"));
  if (unknown) {
    std::string names;
    for (const ConstantInfo& info : infos_)
      if (!info.folded) names += (names.empty() ? "" : ", ") + (info.fqn.empty() ? info.name : info.fqn);
    problem("the model's constants are " + (names.empty() ? std::string("none") : names) +
            " (torch folds into the compiled code what it can compute at compile time: such module values "
            "are no constants and cannot be replaced)");
  }
  if (count)
    return fail(AOTIRT_ERROR_VALUE, ctx.path + ": the constants were not replaced (nothing changed): " + problems);

  // 2. The new values: kept as they are or copied, on the stream.
  std::unordered_map<std::string, AtenTensorHandle> active_map;
  bool active_map_read = false;
  std::vector<Tensor*> made(infos_.size(), nullptr);
  auto discard = [&]() {
    for (Tensor*& t : made) {
      delete t;
      t = nullptr;
    }
  };
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ConstantInfo& info = infos_[i];
    if (info.folded) continue;
    aotirt_status status = AOTIRT_OK;
    if (given[i]) {
      const Tensor& value = *given[i];
      status = share && share[given_at[i]] && can_share(info, value, ctx) ? share_for_model(value, ctx, &made[i])
                                                                          : copy_for_model(info, value, ctx, &made[i]);
    } else if (inactive) {
      // The second buffer gets its own copy of what the active one holds.
      const Tensor* current = sides_[active_].values[i];
      if (!current) {
        if (!active_map_read && ctx.api.extract_constants_map)
          ctx.api.extract_constants_map(ctx.container, reinterpret_cast<AOTInductorConstantMapHandle>(&active_map),
                                        false);
        active_map_read = true;
        auto it = active_map.find(info.fqn.empty() ? info.name : info.fqn);
        if (it != active_map.end()) current = it->second;
      }
      if (!current)
        status = fail(AOTIRT_ERROR_VALUE, ctx.path + ": " + label(info) +
                                              " was left out, and its active value cannot be read to copy it into "
                                              "the second buffer: give it");
      else
        status = copy_for_model(info, *current, ctx, &made[i]);
    }
    if (status != AOTIRT_OK) {
      discard();
      return status;
    }
  }

  // 3. One call: the library points its buffer at them.
  std::vector<AOTInductorConstantMapEntry> pairs;
  for (size_t i = 0; i < infos_.size(); ++i)
    if (made[i]) pairs.push_back({infos_[i].name.c_str(), made[i]});
  clear_error();
  AOTIRuntimeError updated = ctx.api.update_user_managed(ctx.container, pairs.data(), pairs.size(), inactive, false);
  if (updated != 0) {
    // It may point to some of them already: they stay alive.
    for (Tensor*& t : made)
      if (t) retired_.push_back(t);
    std::string reason = *aotirt_last_error_message() ? aotirt_last_error_message() : "no reason given";
    const char* model_message = nullptr;
    if (ctx.api.last_error && ctx.api.last_error(&model_message) == 0 && model_message && *model_message)
      reason = model_message;
    return fail(AOTIRT_ERROR_AOTI, ctx.path + ": AOTInductorModelContainerUpdateUserManagedConstantBufferPairs failed: " +
                                       reason);
  }
  Side& side = sides_[target];
  for (size_t i = 0; i < infos_.size(); ++i) {
    if (!made[i]) continue;
    delete side.values[i];
    side.values[i] = made[i];
    ConstantInfo& info = infos_[i];
    if (!info.shape_known) {
      info.sizes.assign(made[i]->sizes, made[i]->sizes + made[i]->ndim);
      info.strides.assign(made[i]->strides, made[i]->strides + made[i]->ndim);
      info.shape_known = true;
    }
  }
  side.complete = true;
  return AOTIRT_OK;
}

aotirt_status ConstantTable::swap(const ConstantsContext& ctx) {
  AOTIRT_TRY(supported(ctx, true));
  if (!sides_[1 - active_].complete)
    return fail(AOTIRT_ERROR_VALUE, ctx.path + ": the second constant buffer holds no weights: fill it first "
                                               "(update_constants(..., inactive=True)), then swap");
  clear_error();
  if (ctx.api.swap_constants(ctx.container) != 0) {
    const char* model_message = nullptr;
    std::string reason = ctx.api.last_error && ctx.api.last_error(&model_message) == 0 && model_message
                             ? model_message
                             : "no reason given";
    return fail(AOTIRT_ERROR_AOTI, ctx.path + ": AOTInductorModelContainerSwapConstantBuffer failed: " + reason);
  }
  active_ = 1 - active_;
  return AOTIRT_OK;
}

}  // namespace aotirt
