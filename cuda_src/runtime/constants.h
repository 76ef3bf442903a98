// A model's constants by name: what the library says about each (its name,
// original module path, dtype, bytes, shape once loaded), and replacing them
// with tensors aotirt owns, in the active buffer or in the second one that a
// swap makes active (torch's double buffering).
//
// aotirt hands the library its own tensors through torch's user-managed
// update (AOTInductorModelContainerUpdateUserManagedConstantBufferPairs): the
// container keeps the pointers and owns nothing, so the tensors live here,
// one set per buffer, for as long as the container may read them. torch's
// other update (UpdateConstantBuffer) copies into its own blob with a
// synchronous cudaMemcpy, which would make every update wait for the GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "aotirt/aotirt.h"
#include "runtime/container_api.h"
#include "runtime/stream.h"
#include "runtime/tensor.h"

namespace aotirt {

// torch's ConstantType (constant_type.h).
enum ConstantKind : int32_t {
  kConstantUnknown = 0,
  kConstantParameter = 1,
  kConstantBuffer = 2,
  kConstantTensor = 3,
  kConstantFolded = 4,
};

struct ConstantInfo {
  std::string name;  // the library's own (what the update keys by)
  std::string fqn;   // the module's state_dict key, "" when not said
  int32_t dtype = -1;
  int32_t kind = kConstantUnknown;
  uint64_t bytes = 0;
  bool folded = false;  // made by constant folding: never given by a user
  // Known once the library holds a value (ExtractConstantsMap's tensors), or
  // after aotirt gave one; else only `bytes` checks a new value.
  bool shape_known = false;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  // A value must be given by every update that leaves the target buffer
  // without one: parameters with data. Buffers and tensor constants may be
  // left out; they keep their value (copied into the second buffer).
  bool required() const { return !folded && (kind == kConstantParameter || kind == kConstantUnknown) && bytes > 0; }
};

// Where the call happens: the handle's, under its run lock.
struct ConstantsContext {
  const ContainerApi& api;
  AOTInductorModelContainerHandle container;
  const std::string& path;
  int32_t device_type;
  int32_t device_index;
  Stream* stream;  // the handle's (nullptr on the CPU)
};

class ConstantTable {
 public:
  ConstantTable() = default;
  ConstantTable(const ConstantTable&) = delete;
  ConstantTable& operator=(const ConstantTable&) = delete;
  ~ConstantTable();

  // Reads what the library says about its constants, once its container
  // exists; `loaded`: the active buffer holds the library's own values.
  void read(const ContainerApi& api, AOTInductorModelContainerHandle container, bool loaded);
  // After the library loaded values itself (a weights blob): the active
  // buffer holds the library's values again, aotirt's go once the stream passes.
  void library_loaded(const ContainerApi& api, AOTInductorModelContainerHandle container);

  size_t size() const { return infos_.size(); }
  const ConstantInfo& at(size_t i) const { return infos_[i]; }
  // The active value of constant `i` when aotirt owns it (an alias), else
  // nullptr (the library's own, or none).
  const Tensor* active_value(size_t i) const;

  // Replaces constants by name or FQN: every value checked first (a
  // ValueError naming each constant and why, nothing changed), then copies
  // made on the stream (no host wait) unless `share[i]` lets a value be kept
  // as it is, then one call to the library. `inactive`: the second buffer.
  aotirt_status update(const ConstantsContext& ctx, const char* const* keys, Tensor* const* values, const int* share,
                       size_t n, bool inactive);
  // Makes the second buffer active (refused while it holds no full set).
  aotirt_status swap(const ConstantsContext& ctx);
  // Whether the active buffer has a value for every required constant.
  bool active_complete() const { return sides_[active_].complete; }

 private:
  struct Side {
    std::vector<Tensor*> values;  // per constant; nullptr: the library's own value or none
    bool complete = false;        // a value for every non-folded constant
  };
  aotirt_status supported(const ConstantsContext& ctx, bool swap) const;
  // Shapes from the library's loaded tensors; returns how many required
  // constants have one.
  size_t learn_shapes(const ContainerApi& api, AOTInductorModelContainerHandle container);
  size_t required_count() const;
  static void release(Side& side);

  std::vector<ConstantInfo> infos_;
  std::unordered_map<std::string, size_t> index_;  // names and FQNs
  Side sides_[2];
  int active_ = 0;
  // Tensors given to a library whose update failed part way: it may still
  // point to them, so they live as long as the table.
  std::vector<Tensor*> retired_;
};

}  // namespace aotirt
