"""Read-only memory is never written through aotirt: copies into it are
refused (ValueError naming the tensor), a model gets a private copy of a
read-only input, and DLPack exports say read-only."""

import numpy as np
import pytest

import aotirt
from support.helpers import run_python
from support.model_files import stand_in_model

# A model that mutates its input in place and hands it back as its output,
# as AOTInductor does for an exported program that mutates an input
# (x.add_(1) compiles to a kernel that stores through the input's pointer).
MUTATING_MODEL = r"""
typedef struct AtenTensorOpaque* AtenTensorHandle;
extern int32_t aoti_torch_get_data_ptr(AtenTensorHandle, void**);
int AOTInductorModelContainerRun(void* c, AtenTensorHandle* in, size_t ni, AtenTensorHandle* out, size_t no,
                                 void* stream, void* proxy) {
  float* x = NULL;
  aoti_torch_get_data_ptr(in[0], (void**)&x);
  x[0] += 1.0f;
  out[0] = in[0];  /* the stolen input handle becomes the output */
  return 0;
}
"""


@pytest.fixture(scope="module")
def mutating_model(tmp_path_factory):
    return stand_in_model(tmp_path_factory.mktemp("mutating"), "mutating", 1, 1, MUTATING_MODEL)


def read_only_array(values):
    a = np.array(values, np.float32)
    a.flags.writeable = False
    return a


def test_copy_into_a_read_only_array_is_refused():
    frozen = read_only_array([1, 2, 3])
    t = aotirt.asarray(frozen)
    with pytest.raises(ValueError, match=r"copy_: the destination \(float32 \[3\] on cpu\) wraps read-only memory"):
        t.copy_(aotirt.asarray(np.zeros(3, np.float32)))
    np.testing.assert_array_equal(frozen, [1, 2, 3])
    # Every view of it is read-only too: the flag belongs to the memory.
    with pytest.raises(ValueError, match="read-only"):
        t.narrow(0, 1, 1).copy_(aotirt.asarray(np.zeros(1, np.float32)))


def test_copy_into_bytes_is_refused():
    immutable = bytes(range(8))
    t = aotirt.asarray(immutable)
    with pytest.raises(ValueError, match=r"copy_: the destination \(uint8 \[8\] on cpu\) wraps read-only memory"):
        t.copy_(aotirt.asarray(np.zeros(8, np.uint8)))
    assert immutable == bytes(range(8))


def test_copy_into_a_read_only_mapping_is_refused_in_a_subprocess(tmp_path):
    # A file mapped read-only: a write into it was a segmentation fault.
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    proc = run_python(
        "import aotirt, numpy as np\n"
        f"mapped = np.load({str(tmp_path / 'x.npy')!r}, mmap_mode='r')\n"
        "t = aotirt.asarray(mapped)\n"
        "try:\n"
        "    t.copy_(aotirt.asarray(np.zeros(4, np.float32)))\n"
        "    print('written')\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n")
    assert proc.returncode == 0, proc.stderr
    assert "ValueError: copy_: the destination (float32 [4] on cpu) wraps read-only memory" in proc.stdout


def test_writable_tensors_still_take_copies():
    target = np.zeros(3, np.float32)
    aotirt.asarray(target).copy_(aotirt.asarray(np.ones(3, np.float32)))
    np.testing.assert_array_equal(target, [1, 1, 1])


def test_a_model_gets_a_private_copy_of_a_read_only_input(mutating_model):
    with aotirt.AotiHandle(mutating_model) as h:
        frozen = read_only_array([1, 2])
        (out,) = h.run([frozen])
        np.testing.assert_array_equal(frozen, [1, 2])        # never written
        np.testing.assert_array_equal(out.numpy(), [2, 2])   # the model's write landed in its copy
        # A writable input is the model's to mutate, as in torch.
        writable = np.array([1, 2], np.float32)
        (out,) = h.run([writable])
        np.testing.assert_array_equal(writable, [2, 2])
        assert out.data_ptr == writable.ctypes.data


def test_dlpack_exports_say_read_only():
    t = aotirt.asarray(read_only_array([1, 2, 3]))
    exported = np.from_dlpack(t)                         # numpy asks for DLPack 1.0
    assert not exported.flags.writeable
    np.testing.assert_array_equal(exported, [1, 2, 3])
    with pytest.raises(ValueError, match="legacy .*DLPack capsule cannot mark read-only"):
        t.__dlpack__()                                   # the legacy form cannot say read-only
    assert aotirt.asarray(np.ones(2, np.float32)).__dlpack__() is not None


def test_dlpack_imports_keep_read_only():
    frozen = read_only_array([1, 2])

    class Producer:                                       # DLPack only, no buffer protocol
        def __dlpack__(self, **kwargs):
            return frozen.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return frozen.__dlpack_device__()

    t = aotirt.from_dlpack(Producer())
    with pytest.raises(ValueError, match="read-only"):
        t.copy_(aotirt.asarray(np.zeros(2, np.float32)))
    np.testing.assert_array_equal(frozen, [1, 2])
