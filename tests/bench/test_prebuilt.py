"""scripts/prebuilt.py (a build carried to the GPU machine in place of
building there): a pack holds the package's built files and a stamp of the
sources; unpack puts them in place, and refuses a pack made from other
sources or for another Python. Run on a copy of the script in a small tree of
its own (it works on the tree it stands in)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig

from support.helpers import REPO

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def tree(root):
    (root / "scripts").mkdir()
    shutil.copy(os.path.join(REPO, "scripts", "prebuilt.py"), root / "scripts")
    files = {"setup.py": "setup", "cuda_src/runtime/a.cu": "a", "include/aotirt/b.h": "b",
             "pyx/aotirt/c.pyx": "c", "pyx/aotirt/c.cpp": "generated from c.pyx",
             "pyx/aotirt/libaotirt.so": "core", f"pyx/aotirt/_c{SUFFIX}": "module",
             "pyx/aotirt/models/add_mul_cuda.so": "model", "pyx/aotirt/models/lib/x.so": "nested model"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def prebuilt(root, verb, folder):
    return subprocess.run([sys.executable, str(root / "scripts" / "prebuilt.py"), verb, str(folder)],
                          capture_output=True, text=True, timeout=60)


def test_a_pack_unpacks_into_a_fresh_copy_of_the_same_sources(tmp_path):
    built, fresh = tmp_path / "built", tmp_path / "fresh"
    built.mkdir()
    tree(built)
    packed = prebuilt(built, "pack", tmp_path / "pack")
    assert packed.returncode == 0, packed.stderr
    stamp = json.loads((tmp_path / "pack" / "STAMP.json").read_text())
    assert sorted(stamp["files"]) == sorted(["pyx/aotirt/libaotirt.so", f"pyx/aotirt/_c{SUFFIX}",
                                             "pyx/aotirt/models/add_mul_cuda.so", "pyx/aotirt/models/lib/x.so"])

    # The GPU machine's copy: the sources alone, no build outputs.
    shutil.copytree(built, fresh, ignore=shutil.ignore_patterns("*.so", "models", "c.cpp"))
    unpacked = prebuilt(fresh, "unpack", tmp_path / "pack")
    assert unpacked.returncode == 0, unpacked.stderr
    assert (fresh / "pyx/aotirt/libaotirt.so").read_text() == "core"
    assert (fresh / "pyx/aotirt/models/lib/x.so").read_text() == "nested model"
    assert not list(fresh.rglob("*.unpacking"))


def test_unpack_refuses_a_pack_of_other_sources(tmp_path):
    tree(tmp_path)
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    (tmp_path / "cuda_src/runtime/a.cu").write_text("a, changed after the pack")
    (tmp_path / "pyx/aotirt/libaotirt.so").write_text("the machine's own")
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0
    assert "other sources" in unpacked.stderr
    assert (tmp_path / "pyx/aotirt/libaotirt.so").read_text() == "the machine's own"


def test_generated_cpp_and_outputs_are_not_inputs(tmp_path):
    tree(tmp_path)
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    (tmp_path / "pyx/aotirt/c.cpp").write_text("generated anew")
    (tmp_path / "pyx/aotirt/models/add_mul_cuda.so").write_text("rebuilt")
    assert prebuilt(tmp_path, "unpack", tmp_path / "pack").returncode == 0


def test_unpack_refuses_modules_for_another_python(tmp_path):
    tree(tmp_path)
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    stamp_path = tmp_path / "pack" / "STAMP.json"
    stamp = json.loads(stamp_path.read_text())
    stamp["ext_suffix"] = ".cpython-20-other.so"
    stamp_path.write_text(json.dumps(stamp))
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0 and ".cpython-20-other.so" in unpacked.stderr


def test_pack_refuses_a_tree_with_no_build_and_unpack_one_with_no_stamp(tmp_path):
    tree(tmp_path)
    (tmp_path / "pyx/aotirt/libaotirt.so").unlink()
    packed = prebuilt(tmp_path, "pack", tmp_path / "pack")
    assert packed.returncode != 0 and "build first" in packed.stderr
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "nothing")
    assert unpacked.returncode != 0 and "STAMP.json" in unpacked.stderr


def test_unpack_refuses_a_file_outside_the_package(tmp_path):
    tree(tmp_path)
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    stamp_path = tmp_path / "pack" / "STAMP.json"
    stamp = json.loads(stamp_path.read_text())
    stamp["files"].append("pyx/aotirt/../../setup.py")
    stamp_path.write_text(json.dumps(stamp))
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0 and "outside pyx/aotirt" in unpacked.stderr
    assert (tmp_path / "setup.py").read_text() == "setup"
