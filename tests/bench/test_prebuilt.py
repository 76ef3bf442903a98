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
             "cuda_src/models/make_weights.py": "weights", "pyx/aotirt/c.pyx": "c",
             "pyx/aotirt/c.cpp": "generated from c.pyx", f"pyx/aotirt/_c{SUFFIX}": "module",
             "pyx/aotirt/models/add_mul_cuda.so": "model", "pyx/aotirt/models/lib/x.so": "nested model"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    # unpack loads the library it put in place: a real (empty) one.
    subprocess.run(["cc", "-shared", "-o", str(root / "pyx/aotirt/libaotirt.so"), "-x", "c", "/dev/null"],
                   check=True, capture_output=True)


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
    assert stamp["archs"]

    # The GPU machine's copy: the sources alone, no build outputs.
    def outputs(folder, names):
        if not folder.endswith(os.path.join("pyx", "aotirt")):
            return []
        return [n for n in names if n == "models" or n.endswith((".so", ".cpp"))]
    shutil.copytree(built, fresh, ignore=outputs)
    unpacked = prebuilt(fresh, "unpack", tmp_path / "pack")
    assert unpacked.returncode == 0, unpacked.stderr
    assert (fresh / "pyx/aotirt/libaotirt.so").read_bytes() == (built / "pyx/aotirt/libaotirt.so").read_bytes()
    assert (fresh / "pyx/aotirt/models/lib/x.so").read_text() == "nested model"
    assert not list(fresh.rglob("*.unpacking"))


def test_a_pack_carries_the_cudnn_frontend_headers_its_build_used_and_no_others(tmp_path):
    built = tmp_path / "built"
    built.mkdir()
    tree(built)
    site = tmp_path / "site-packages" / "include"   # the wheel's folder, shared with other packages
    (site / "cudnn_frontend" / "graph").mkdir(parents=True)
    (site / "cudnn_frontend.h").write_text("frontend")
    (site / "cudnn_backend_base.h").write_text("backend base")
    (site / "cudnn_frontend" / "graph" / "graph.h").write_text("graph")
    (site / "another_package.h").write_text("not cudnn-frontend's")
    setup = built / "setup.py"                     # setup.py's finders, as the real one names them
    setup.write_text("def find_cuda_home():\n    return '/usr/local/cuda'\n\n\n"
                     f"def find_cudnn_frontend(cuda_home):\n    return {str(site)!r}\n")
    os.utime(setup, (1, 1))                        # written before the build, as a source is
    packed = prebuilt(built, "pack", tmp_path / "pack")
    assert packed.returncode == 0, packed.stderr
    assert "with the cudnn-frontend headers of " + str(site) in packed.stdout
    headers = tmp_path / "pack" / "cudnn-frontend" / "include"
    assert (headers / "cudnn_frontend.h").read_text() == "frontend"
    assert (headers / "cudnn_backend_base.h").read_text() == "backend base"
    assert (headers / "cudnn_frontend" / "graph" / "graph.h").read_text() == "graph"
    assert not (headers / "another_package.h").exists()
    assert json.loads((tmp_path / "pack" / "STAMP.json").read_text())["frontend"] == "cudnn-frontend/include"


def test_a_tree_whose_setup_names_no_frontend_packs_without_headers(tmp_path):
    built = tmp_path / "built"
    built.mkdir()
    tree(built)                                    # its setup.py is not Python
    packed = prebuilt(built, "pack", tmp_path / "pack")
    assert packed.returncode == 0, packed.stderr
    assert json.loads((tmp_path / "pack" / "STAMP.json").read_text())["frontend"] is None
    assert not (tmp_path / "pack" / "cudnn-frontend").exists()


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


def test_pack_refuses_sources_changed_after_the_build(tmp_path):
    tree(tmp_path)
    later = os.path.getmtime(tmp_path / "pyx/aotirt/libaotirt.so") + 10
    os.utime(tmp_path / "cuda_src/models/make_weights.py", (later, later))
    packed = prebuilt(tmp_path, "pack", tmp_path / "pack")
    assert packed.returncode != 0 and "changed after the build" in packed.stderr
    assert "make_weights.py" in packed.stderr


def test_pack_replaces_only_an_earlier_pack(tmp_path):
    tree(tmp_path)
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "notes.txt").write_text("mine")
    packed = prebuilt(tmp_path, "pack", tmp_path / "keep")
    assert packed.returncode != 0 and "not a pack" in packed.stderr
    assert (tmp_path / "keep" / "notes.txt").read_text() == "mine"
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0  # an earlier pack: replaced


def test_unpack_refuses_a_pack_missing_a_file_or_naming_a_source(tmp_path):
    tree(tmp_path)
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    stamp_path = tmp_path / "pack" / "STAMP.json"
    good = json.loads(stamp_path.read_text())
    (tmp_path / "pack/pyx/aotirt/models/add_mul_cuda.so").unlink()
    (tmp_path / "pyx/aotirt/models/add_mul_cuda.so").write_text("the machine's own")
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0 and "does not hold it" in unpacked.stderr
    assert (tmp_path / "pyx/aotirt/models/add_mul_cuda.so").read_text() == "the machine's own"
    held = [f for f in good["files"] if not f.endswith("add_mul_cuda.so")]
    stamp_path.write_text(json.dumps(dict(good, files=held + ["pyx/aotirt/c.pyx"])))
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0 and "which no build writes" in unpacked.stderr
    stamp_path.write_text(json.dumps({"files": []}))
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0 and "not a pack's stamp" in unpacked.stderr


def test_unpack_refuses_a_library_that_does_not_load(tmp_path):
    tree(tmp_path)
    (tmp_path / "pyx/aotirt/libaotirt.so").write_text("not an ELF file")
    assert prebuilt(tmp_path, "pack", tmp_path / "pack").returncode == 0
    unpacked = prebuilt(tmp_path, "unpack", tmp_path / "pack")
    assert unpacked.returncode != 0 and "does not load on this machine" in unpacked.stderr
