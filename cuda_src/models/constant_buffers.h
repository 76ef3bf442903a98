// The constants (weights) of an example model that has some, held as torch's
// AOTInductor container holds them (model_container.h): two buffers of
// tensors, the active one that runs read and a second one that a swap makes
// active. A buffer is filled from a weights blob (the tensors are the
// container's own) or by the caller's tensors (user-managed: the container
// keeps the pointers and owns nothing; the caller keeps them alive).
//
// container.cpp exports the container ABI's constant functions over this
// class for the models built with AOTIRT_MODEL_HAS_STATE; setup.py links
// constant_buffers.cpp into those models only.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "container.h"

namespace model {

// One constant of a model. Every one is a float32 parameter (torch's
// ConstantType::Parameter), contiguous, never made by constant folding: the
// example models have no buffers and fold nothing. Its name is also its FQN
// (the module path a state_dict would key it by).
struct ConstantSpec {
  const char* name;
  std::vector<int64_t> shape;
};
// The model's constants, in blob order: a model file with state defines it.
const std::vector<ConstantSpec>& constant_specs();

// torch's ConstantType::Parameter (constant_type.h).
inline constexpr int32_t kConstantParameter = 1;

// What run() reads: the active buffer's values, by constant index. The data
// pointers are read once, when a buffer is filled: runs look weights up on
// every decoder step, and a lookup then costs no shim call.
class ConstantValues {
 public:
  const float* operator[](size_t i) const { return data_.at(i); }

 private:
  friend class ConstantBuffers;
  std::vector<const float*> data_;  // per constant; nullptr: none yet
  bool complete_ = false;           // a value for every constant
};

class ConstantBuffers {
 public:
  explicit ConstantBuffers(const Device& device);
  ConstantBuffers(const ConstantBuffers&) = delete;
  ConstantBuffers& operator=(const ConstantBuffers&) = delete;
  ~ConstantBuffers();

  size_t size() const { return specs_.size(); }
  // Fails, naming the index and the count, when `i` is out of range.
  const ConstantSpec& spec(size_t i) const;
  uint64_t data_size(size_t i) const;  // bytes of constant `i`
  uint64_t blob_size() const;          // bytes of a whole blob

  // torch's update_constants_from_blob: the active buffer gets tensors of
  // its own, one view each of one new tensor holding the blob (float32
  // values in spec order, as make_weights.py writes them).
  void load_blob(const uint8_t* blob);
  // torch's update_constant_buffer(user_managed = true): the buffer points
  // to the given tensors. Everything is checked first (a name the model does
  // not have, a tensor of another dtype, shape, layout or device, a constant
  // missing when `validate_full_update`): on any error nothing changes.
  // Constants left out keep their value in that buffer.
  void update_user_managed(const AOTInductorConstantMapEntry* pairs, size_t num_pairs, bool use_inactive,
                           bool validate_full_update);
  // torch's swap_constant_buffer: the second buffer becomes active.
  void swap() { active_ = 1 - active_; }
  // torch's extract_constants_map: the buffer's tensors by FQN (those it has).
  void extract(std::unordered_map<std::string, AtenTensorHandle>& out, bool use_inactive) const;

  // The active buffer's values; fails when it lacks any.
  const ConstantValues& active() const;

 private:
  struct Buffer {
    std::vector<AtenTensorHandle> tensors;  // per constant; nullptr: none
    std::vector<bool> owned;                // whether `tensors[i]` is ours to delete
    ConstantValues values;
  };
  void set(Buffer& buffer, size_t i, AtenTensorHandle tensor, bool owned);
  // Why `tensor` cannot be constant `i`, or "".
  std::string mismatch(size_t i, AtenTensorHandle tensor) const;

  Device device_;
  const std::vector<ConstantSpec>& specs_;
  std::unordered_map<std::string, size_t> index_;
  Buffer buffers_[2];
  int active_ = 0;
};

}  // namespace model
