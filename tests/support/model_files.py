"""Model files that tests make: stand-in model libraries compiled from C
with the container entry points every model library has, and .pt2 packages
laid out as torch._inductor.aoti_compile_and_package writes them."""

import json
import subprocess
import zipfile

# What aotirt opens a library with, for a stand-in whose container is a
# static int: creation, deletion, and the input and output counts. The test
# adds its own Run (and whatever else it needs).
_CONTAINER = r"""
#include <stddef.h>
#include <stdint.h>
static int container;
int AOTInductorModelContainerCreateWithDevice(void** c, size_t n, const char* d, const char* cubin) {
  *c = &container;
  return 0;
}
int AOTInductorModelContainerDelete(void* c) { return 0; }
int AOTInductorModelContainerGetNumInputs(void* c, size_t* n) { *n = %(inputs)d; return 0; }
int AOTInductorModelContainerGetNumOutputs(void* c, size_t* n) { *n = %(outputs)d; return 0; }
"""


def stand_in_model(folder, name, inputs, outputs, body):
    """Compiles a stand-in model library `name`.so in `folder` (a pathlib
    folder): the container entry points with `inputs` inputs and `outputs`
    outputs, then the C `body`. Returns the library's path."""
    source = folder / f"{name}.c"
    source.write_text(_CONTAINER % {"inputs": inputs, "outputs": outputs} + body)
    library = folder / f"{name}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def pt2_package(path, library, blob=None, device="cpu"):
    """A .pt2 at `path` holding `library`, the metadata naming `device`, and,
    unless None, the weights blob `blob` (bytes). Returns the path."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("m/archive_format", "pt2")
        with open(library, "rb") as f:
            z.writestr("m/data/aotinductor/model/x.wrapper.so", f.read())
        z.writestr("m/data/aotinductor/model/x.wrapper_metadata.json", json.dumps({"AOTI_DEVICE_KEY": device}))
        if blob is not None:
            z.writestr("m/data/aotinductor/model/x.wrapper_weights.blob", blob)
    return str(path)
