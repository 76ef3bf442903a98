"""aotirt.load on libraries and .pt2 packages, and extraction safety: entries
that escape their folder, links and oversize entries are refused, and nothing
is written outside aotirt's cache folder."""

import json
import os
import stat
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import aotirt

ADD_MUL_CPU = aotirt.models.path("add_mul", "cpu")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTIRT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def make_package(path, entries):
    """A zip laid out like aoti_compile_and_package's: entries name -> bytes."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pkg/archive_format", "pt2")
        for name, data in entries.items():
            z.writestr(name, data)
    return path


def library_bytes():
    with open(ADD_MUL_CPU, "rb") as f:
        return f.read()


def metadata(device):
    return json.dumps({"AOTI_DEVICE_KEY": device, "AOTI_PLATFORM": "linux"})


def run_add_mul(handle):
    x = np.full(5, 2.0, np.float32)
    return handle.run([x, x, x])[0].numpy()


def test_load_a_library_picks_the_cpu_for_a_cpu_build():
    with aotirt.load(ADD_MUL_CPU) as h:
        assert type(h) is aotirt.AotiHandle
        np.testing.assert_array_equal(run_add_mul(h), np.full(5, 6.0, np.float32))


def test_load_a_package(tmp_path, private_cache):
    package = make_package(tmp_path / "m.pt2", {
        "pkg/data/aotinductor/model/abc.wrapper.so": library_bytes(),
        "pkg/data/aotinductor/model/abc.wrapper_metadata.json": metadata("cpu"),
        "pkg/data/aotinductor/model/abc.wrapper.cpp": "// source, not extracted for use",
    })
    with aotirt.load(package) as h:
        assert h.path.startswith(str(private_cache))
        np.testing.assert_array_equal(run_add_mul(h), np.full(5, 6.0, np.float32))
    # The second load reuses the extracted copy.
    folders = os.listdir(private_cache / "pt2")
    with aotirt.load(package) as h:
        np.testing.assert_array_equal(run_add_mul(h), np.full(5, 6.0, np.float32))
    assert os.listdir(private_cache / "pt2") == folders


def test_package_device_comes_from_its_metadata(tmp_path):
    package = make_package(tmp_path / "m.pt2", {
        "pkg/data/aotinductor/model/abc.wrapper.so": library_bytes(),
        "pkg/data/aotinductor/model/abc.wrapper_metadata.json": metadata("cuda"),
    })
    # A CUDA package on a CPU-built library: the CUDA handle is asked for,
    # which fails without a GPU (CudaError) or refuses the CPU build (AotiError).
    with pytest.raises((aotirt.CudaError, aotirt.AotiError)):
        aotirt.load(package)
    with aotirt.load(package, device="cpu") as h:
        assert h.device == "cpu"


def test_package_with_a_weights_blob_loads_it(tmp_path):
    # add_mul exports no AOTInductorModelUpdateConstantsFromBlob, so loading a
    # blob for it must fail loudly, which proves the blob is handed over.
    package = make_package(tmp_path / "m.pt2", {
        "pkg/data/aotinductor/model/abc.wrapper.so": library_bytes(),
        "pkg/data/aotinductor/model/abc.wrapper_weights.blob": b"\0" * 64,
        "pkg/data/aotinductor/model/abc.wrapper_metadata.json": metadata("cpu"),
    })
    with pytest.raises(aotirt.AotiError, match="does not export AOTInductorModelUpdateConstantsFromBlob"):
        aotirt.load(package)


@pytest.mark.parametrize("entries, message", [
    ({}, "has no AOTInductor library"),
    ({"pkg/data/aotinductor/model/readme.txt": "x"}, "expected one model library"),
    ({"pkg/data/aotinductor/a/x.wrapper.so": b"", "pkg/data/aotinductor/b/y.wrapper.so": b""},
     "holds several models"),
])
def test_packages_missing_entries(tmp_path, entries, message):
    with pytest.raises(aotirt.AotiError, match=message):
        aotirt.load(make_package(tmp_path / "m.pt2", entries))


def test_choosing_a_model_by_name(tmp_path):
    package = make_package(tmp_path / "m.pt2", {
        "pkg/data/aotinductor/first/x.wrapper.so": library_bytes(),
        "pkg/data/aotinductor/second/y.wrapper.so": library_bytes(),
    })
    with aotirt.load(package, model="second", device="cpu") as h:
        assert "second" in h.path
    with pytest.raises(aotirt.AotiError, match="has no model 'third'"):
        aotirt.load(package, model="third")


@pytest.mark.parametrize("name", [
    "pkg/data/aotinductor/../../escape.so",
    "pkg/data/aotinductor/model/../../../escape.so",
    "/abs/data/aotinductor/model/x.so",
    "pkg/data/aotinductor/model/sub/x.so",
    "pkg/data/aotinductor/model\\..\\x.so",
])
def test_entries_that_escape_are_refused(tmp_path, private_cache, name):
    with pytest.raises(aotirt.AotiError, match="unsafe path"):
        aotirt.load(make_package(tmp_path / "m.pt2", {name: b"payload"}))
    written = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    assert all(not f.endswith("escape.so") for f in written), written
    assert not (private_cache / "pt2").exists() or not any(
        f for _, _, f in os.walk(private_cache / "pt2"))


def test_link_entries_are_refused(tmp_path):
    package = tmp_path / "m.pt2"
    with zipfile.ZipFile(package, "w") as z:
        info = zipfile.ZipInfo("pkg/data/aotinductor/model/x.wrapper.so")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/passwd")
    with pytest.raises(aotirt.AotiError, match="symbolic link"):
        aotirt.load(package)


def test_oversize_entries_are_refused(tmp_path):
    package = make_package(tmp_path / "m.pt2", {"pkg/data/aotinductor/model/x.wrapper.so": b"\0" * 4096})
    code = ("import os, aotirt\n"
            "try:\n"
            f"    aotirt.load({str(package)!r})\n"
            "except aotirt.AotiError as e:\n"
            "    print(e)\n")
    env = dict(os.environ, AOTIRT_PT2_MAX_ENTRY_BYTES="1024", AOTIRT_CACHE=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert "is 4096 bytes, over the limit of 1024" in out, out
    env = dict(os.environ, AOTIRT_PT2_MAX_TOTAL_BYTES="1024", AOTIRT_CACHE=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    assert "exceed 1024 bytes" in out, out


def test_not_a_package_or_library(tmp_path):
    junk = tmp_path / "junk.pt2"
    junk.write_bytes(b"PK\x03\x04 truncated zip")
    with pytest.raises(aotirt.AotiError):
        aotirt.load(junk)
    with pytest.raises(aotirt.AotiError, match="no such file"):
        aotirt.load(tmp_path / "missing.pt2")


def test_corrupt_member_is_refused_and_leaves_nothing(tmp_path, private_cache):
    package = make_package(tmp_path / "m.pt2", {"pkg/data/aotinductor/model/x.wrapper.so": library_bytes()})
    data = bytearray(package.read_bytes())
    start = data.find(b"\x7fELF")
    assert start > 0   # stored uncompressed by writestr's default
    data[start + 100: start + 200] = b"\xff" * 100  # CRC mismatch
    package.write_bytes(bytes(data))
    with pytest.raises(aotirt.AotiError, match="cannot extract"):
        aotirt.load(package)
    assert not any(f for _, _, f in os.walk(private_cache))


# ---- broken packages: AotiError naming the package and the entry -------------

@pytest.mark.parametrize("data, message", [
    (b"{not json", "is not valid JSON metadata"),
    (b"\xff\xfe\x00binary", "is not valid JSON metadata"),
    (b'["AOTI_DEVICE_KEY", "cpu"]', "holds a JSON list, not the object of AOTInductor metadata"),
    (b'"cpu"', "holds a JSON str"),
])
def test_broken_metadata_names_the_entry(tmp_path, data, message):
    # Raw JSONDecodeError / AttributeError ('list' object has no attribute 'get') before.
    package = make_package(tmp_path / "m.pt2", {
        "pkg/data/aotinductor/model/abc.wrapper.so": library_bytes(),
        "pkg/data/aotinductor/model/abc.wrapper_metadata.json": data,
    })
    with pytest.raises(aotirt.AotiError, match=rf"m\.pt2: entry 'data/aotinductor/model/abc\.wrapper_metadata\.json' "
                                               rf"{message}"):
        aotirt.load(package)


def test_duplicate_entries_are_refused(tmp_path):
    # FileExistsError before.
    package = tmp_path / "m.pt2"
    with zipfile.ZipFile(package, "w") as z, pytest.warns(UserWarning, match="Duplicate name"):
        z.writestr("pkg/data/aotinductor/model/abc.wrapper.so", library_bytes())
        z.writestr("pkg/data/aotinductor/model/abc.wrapper.so", b"\x7fELF other")
    with pytest.raises(aotirt.AotiError, match=r"entry 'pkg/data/aotinductor/model/abc\.wrapper\.so' appears twice"):
        aotirt.load(package)


def cached_files(cache):
    return [os.path.join(d, f) for d, _, files in os.walk(cache / "pt2") for f in files
            if not d.split(os.sep)[-1].startswith(".")]


def load_in_a_subprocess(package, cache):
    """aotirt.load and one run in a fresh process (a process that has a
    library mapped must not see it damaged under it: that is a crash anywhere)."""
    proc = subprocess.run([sys.executable, "-c",
                           "import aotirt, numpy as np\n"
                           f"with aotirt.load({str(package)!r}) as h:\n"
                           "    x = np.full(5, 2.0, np.float32)\n"
                           "    print(h.path, h.run([x, x, x])[0].numpy().tolist())\n"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, AOTIRT_CACHE=str(cache)))
    assert proc.returncode == 0, proc.stderr
    path, result = proc.stdout.split(" ", 1)
    assert result.strip() == "[6.0, 6.0, 6.0, 6.0, 6.0]"
    return path


def test_a_cache_damaged_later_is_extracted_again(tmp_path, private_cache):
    # A cached library cut short after extraction was trusted ("too short to
    # be a shared library" about a file the user never made).
    package = make_package(tmp_path / "m.pt2", {
        "pkg/data/aotinductor/model/abc.wrapper.so": library_bytes(),
        "pkg/data/aotinductor/model/abc.wrapper_metadata.json": metadata("cpu"),
    })
    cached = load_in_a_subprocess(package, private_cache)
    os.truncate(cached, 100)                                  # cut short
    assert load_in_a_subprocess(package, private_cache) == cached
    assert os.path.getsize(cached) == len(library_bytes())
    os.remove(cached)                                         # removed
    load_in_a_subprocess(package, private_cache)
    data = bytearray(library_bytes())                         # same size, other bytes, a later time
    data[200:300] = b"\0" * 100
    with open(cached, "r+b") as f:
        f.write(bytes(data))
    os.utime(cached, ns=(os.stat(cached).st_atime_ns, os.stat(cached).st_mtime_ns + 10**9))
    load_in_a_subprocess(package, private_cache)
    assert open(cached, "rb").read() == library_bytes()


def test_files_added_to_the_cache_are_ignored_and_a_lost_manifest_redoes_it(tmp_path, private_cache):
    package = make_package(tmp_path / "m.pt2", {"pkg/data/aotinductor/model/abc.wrapper.so": library_bytes()})
    with aotirt.load(package, device="cpu") as h:
        folder = os.path.dirname(h.path)
    # A second library dropped beside it: the package holds one, so one is opened.
    with open(os.path.join(folder, "zzz.wrapper.so"), "wb") as f:
        f.write(library_bytes())
    with aotirt.load(package, device="cpu") as h:
        assert h.path.endswith("abc.wrapper.so")
    manifest = os.path.join(os.path.dirname(os.path.dirname(folder)), "manifest.json")
    os.remove(manifest)
    with aotirt.load(package, device="cpu") as h:
        assert h.path.endswith("abc.wrapper.so")
    assert os.path.exists(manifest) and not os.path.exists(os.path.join(folder, "zzz.wrapper.so"))


def test_a_damaged_cache_that_cannot_be_replaced_says_where(tmp_path, private_cache, monkeypatch):
    from aotirt import loader

    package = make_package(tmp_path / "m.pt2", {"pkg/data/aotinductor/model/abc.wrapper.so": library_bytes(),
                                                "pkg/data/aotinductor/model/abc.wrapper_metadata.json": metadata("cpu")})
    cached = load_in_a_subprocess(package, private_cache)
    os.truncate(cached, 10)
    target = os.path.dirname(os.path.dirname(os.path.dirname(cached)))
    real_rename = os.rename

    def rename(source, destination):      # the cache folder refuses changes (a read-only mount...)
        if os.fspath(source) == target:
            raise PermissionError(13, "Permission denied", source)
        return real_rename(source, destination)

    monkeypatch.setattr(loader.os, "rename", rename)
    with pytest.raises(aotirt.AotiError, match=rf"the cached extraction at {target} is damaged .* could not be "
                                               r"replaced .*Permission denied.*: delete that folder"):
        aotirt.load(package)


@pytest.mark.parametrize("value, message", [("8G", "is not a number of bytes"), ("-1", "is negative")])
def test_bad_size_limits_in_the_environment(tmp_path, monkeypatch, value, message):
    # They were parsed at import: a bad value made `import aotirt.loader` fail.
    package = make_package(tmp_path / "m.pt2", {"pkg/data/aotinductor/model/x.wrapper.so": library_bytes()})
    monkeypatch.setenv("AOTIRT_PT2_MAX_ENTRY_BYTES", value)
    with pytest.raises(aotirt.AotiError, match=f"AOTIRT_PT2_MAX_ENTRY_BYTES='{value}' {message}"):
        aotirt.load(package)
