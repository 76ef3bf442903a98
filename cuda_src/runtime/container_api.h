// The AOTInductor container C ABI as one library exports it: the entry
// points a handle resolves with dlsym when it opens the library.
#pragma once

#include "aotirt/aoti_abi.h"

namespace aotirt {

// The container entry points of one library. The first five are required.
struct ContainerApi {
  AOTInductorModelContainerCreateWithDeviceFunc create = nullptr;
  AOTInductorModelContainerDeleteFunc destroy = nullptr;
  AOTInductorModelContainerGetNumInputsFunc num_inputs = nullptr;
  AOTInductorModelContainerGetNumOutputsFunc num_outputs = nullptr;
  AOTInductorModelContainerRunFunc run = nullptr;
  // Optional.
  AOTInductorModelContainerRunFunc run_single_threaded = nullptr;
  AOTInductorModelContainerGetInputNameFunc input_name = nullptr;
  AOTInductorModelContainerGetOutputNameFunc output_name = nullptr;
  AOTInductorModelContainerGetCallSpecFunc call_spec = nullptr;
  AOTInductorModelUpdateConstantsFromBlobFunc update_constants_from_blob = nullptr;
  AOTInductorGetLastErrorFunc last_error = nullptr;
  // What the library says about its weights (see WeightsFacts).
  AOTInductorModelContainerGetNumConstantsFunc num_constants = nullptr;
  AOTInductorModelContainerGetConstantsBlobSizeFunc constants_blob_size = nullptr;
  AOTInductorModelContainerGetConstantDataSizeFunc constant_data_size = nullptr;
  AOTInductorModelContainerGetConstantFromFoldedFunc constant_from_folded = nullptr;
  AOTInductorModelContainerExtractConstantsMapEntriesFunc extract_constants = nullptr;
  // Constants by name (runtime/constants.h).
  AOTInductorModelContainerGetConstantNameFunc constant_name = nullptr;
  AOTInductorModelContainerGetConstantOriginalFQNFunc constant_fqn = nullptr;
  AOTInductorModelContainerGetConstantTypeFunc constant_type = nullptr;
  AOTInductorModelContainerGetConstantDtypeFunc constant_dtype = nullptr;
  AOTInductorModelContainerExtractConstantsMapFunc extract_constants_map = nullptr;
  AOTInductorModelContainerUpdateUserManagedConstantBufferPairsFunc update_user_managed = nullptr;
  AOTInductorModelContainerSwapConstantBufferFunc swap_constants = nullptr;
};

}  // namespace aotirt
