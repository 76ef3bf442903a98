"""Fuzzing the .pt2 reader and the weights loader: many mutated packages and
blobs (truncated, extended, flipped bytes, wrong metadata, duplicate entries,
absolute and '..' paths, huge declared sizes, ...), seeded and bounded in
time, must each end in AotiError or ValueError (or run, with finite outputs,
when the mutation does not matter), never in a crash, a hang, a leak or NaN
output.

Each batch of cases runs in a subprocess (tests/support/fuzz_worker.py): a crash
or a hang is reported as a failure naming the mutation that caused it.
AOTIRT_FUZZ_SEED picks another seed, AOTIRT_FUZZ_SECONDS another budget.
"""

import io
import json
import os
import random
import struct
import subprocess
import sys
import time
import zipfile

import pytest

import aotirt

SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support")
SEED = int(os.environ.get("AOTIRT_FUZZ_SEED", "20261201"))
SECONDS = float(os.environ.get("AOTIRT_FUZZ_SECONDS", "20"))
BATCH = 24
# A mutated package or blob may be refused, or (when the mutation did not
# touch what is used: a flipped byte in an unused entry...) run.
ALLOWED = {"ok", "AotiError", "ValueError"}

ROOT = "pkg/data/aotinductor/model/"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def entries_of(kind):
    """The base packages: add_mul (no weights) and the encoder (a weights blob)."""
    if kind == "add_mul":
        return {"pkg/archive_format": b"pt2",
                ROOT + "abc.wrapper.so": read(aotirt.models.path("add_mul", "cpu")),
                ROOT + "abc.wrapper_metadata.json": json.dumps({"AOTI_DEVICE_KEY": "cpu"}).encode()}
    return {"pkg/archive_format": b"pt2",
            ROOT + "enc.wrapper.so": read(aotirt.models.path("encoder", "cpu")),
            ROOT + "enc.wrapper_weights.blob": read(aotirt.models.weights("encoder")),
            ROOT + "enc.wrapper_metadata.json": json.dumps({"AOTI_DEVICE_KEY": "cpu"}).encode()}


def zip_of(entries, compression=zipfile.ZIP_STORED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buffer.getvalue()


# ---- mutations: each returns the bytes of a package --------------------------

def truncated(rng, entries):
    data = zip_of(entries.items())
    return data[: rng.randrange(0, len(data))]


def extended(rng, entries):
    return zip_of(entries.items()) + rng.randbytes(rng.choice([1, 7, 100, 5000]))


def flipped(rng, entries):
    data = bytearray(zip_of(entries.items(), rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])))
    for _ in range(rng.choice([1, 2, 8, 64])):
        data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
    return bytes(data)


def wrong_metadata(rng, entries):
    values = [b"", b"{", b"\xff\xfe", b"[]", b"null", b"42", b'"cpu"', b"[" * 100000 + b"]" * 100000,
              json.dumps({"AOTI_DEVICE_KEY": rng.choice([None, 1, [], {}, "tpu", "", "cpu\0"])}).encode(),
              rng.randbytes(rng.randrange(1, 200))]
    value = rng.choice(values)
    return zip_of([(n, value if n.endswith("_metadata.json") else d) for n, d in entries.items()])


def duplicated(rng, entries):
    items = list(entries.items())
    name, data = rng.choice([i for i in items if i[0].startswith(ROOT)])
    other = rng.choice([data, data[: len(data) // 2], b"", rng.randbytes(64)])
    items.insert(rng.randrange(len(items) + 1), (name, other))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # zipfile: "Duplicate name"
        return zip_of(items)


def escaping_path(rng, entries):
    evil = rng.choice(["/abs/data/aotinductor/model/x.wrapper.so", "pkg/data/aotinductor/../../x.wrapper.so",
                       "pkg/data/aotinductor/model/../../../x.so", "pkg/data/aotinductor/model/sub/x.so",
                       "pkg/data/aotinductor/model\\..\\x.so", "pkg/data/aotinductor/./x.wrapper.so",
                       "pkg/data/aotinductor//x.wrapper.so", "pkg/data/aotinductor/model/x\0.so"])
    items = list(entries.items())
    items.append((evil, read(aotirt.models.path("add_mul", "cpu"))))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in items:
            info = zipfile.ZipInfo("placeholder")
            info.filename = name   # as written, NUL and backslashes included
            z.writestr(info, data)
    return buffer.getvalue()


def _patch_headers(data, patch):
    """Applies patch(record, offset) to every central-directory record."""
    data = bytearray(data)
    start = 0
    while True:
        at = data.find(b"PK\x01\x02", start)
        if at < 0:
            return bytes(data)
        patch(data, at)
        start = at + 4


def huge_sizes(rng, entries):
    size = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 1 << 31, 0])

    def patch(data, at):   # uncompressed size at +24, compressed at +20 in a central record
        field = rng.choice([20, 24])
        struct.pack_into("<I", data, at + field, size)
    return _patch_headers(zip_of(entries.items()), patch)


def odd_method_or_flags(rng, entries):
    def patch(data, at):
        if rng.random() < 0.5:
            struct.pack_into("<H", data, at + 10, rng.choice([1, 6, 12, 14, 97, 99]))   # compression method
        else:
            struct.pack_into("<H", data, at + 8, 1)                                    # "encrypted"
    return _patch_headers(zip_of(entries.items()), patch)


def cut_entry(rng, entries):
    name = rng.choice([n for n in entries if n.startswith(ROOT)])
    data = entries[name]
    changed = dict(entries)
    changed[name] = rng.choice([b"", data[: rng.randrange(0, max(1, len(data)))],
                                data + rng.randbytes(rng.choice([1, 64, 4096]))])
    return zip_of(changed.items())


def odd_layout(rng, entries):
    changed = dict(entries)
    choice = rng.randrange(4)
    library = next(n for n in entries if n.endswith(".wrapper.so"))
    if choice == 0:
        del changed[library]                                               # no library
    elif choice == 1:
        changed[ROOT + "zzz.wrapper.so"] = entries[library]                # two libraries
    elif choice == 2:
        changed["pkg/data/aotinductor/second/x.wrapper.so"] = entries[library]   # two models
    else:
        changed[library[: -len(".so")] + ".txt"] = changed.pop(library)   # renamed away
    return zip_of(changed.items())


PACKAGE_MUTATIONS = [truncated, extended, flipped, wrong_metadata, duplicated, escaping_path, huge_sizes,
                     odd_method_or_flags, cut_entry, odd_layout]


def blob_mutation(rng, blob):
    """A weights blob of another size: too short, too long, empty."""
    choice = rng.randrange(4)
    if choice == 0:
        return "blob_truncated", blob[: rng.randrange(0, len(blob))]
    if choice == 1:
        return "blob_extended", blob + rng.randbytes(rng.choice([1, 3, 64, 1 << 16]))
    if choice == 2:
        return "blob_empty", b""
    return "blob_one_short", blob[:-1]


# ---- the run ---------------------------------------------------------------------

def blob_libraries():
    """(name, library, its blob, an input file or None) to feed mutated blobs:
    the encoder, and torch's mlp_blob where torch can compile it."""
    found = [("encoder", aotirt.models.path("encoder", "cpu"), read(aotirt.models.weights("encoder")), None)]
    from test_aoti_models import model_folder, torch_python

    if torch_python() is not None:
        from aotirt import loader

        folder, _ = model_folder("mlp_blob", "cpu")
        library, blob, _ = loader.locate(os.path.join(folder, "model.pt2"))
        found.append(("mlp_blob", library, read(blob), os.path.join(folder, "input0.npy")))
    return found


def make_cases(rng, folder, count, start, libraries):
    cases = []
    for i in range(start, start + count):
        path = os.path.join(folder, f"case{i}")
        if rng.random() < 0.2:
            name, library, good_blob, input_file = rng.choice(libraries)
            mutation, blob = blob_mutation(rng, good_blob)
            with open(path + ".blob", "wb") as f:
                f.write(blob)
            cases.append({"name": f"{i}:{mutation}({name}, {len(blob)} bytes)", "kind": "blob",
                          "path": path + ".blob", "library": library, "input": input_file})
            continue
        base = rng.choice(["add_mul", "encoder"])
        mutation = rng.choice(PACKAGE_MUTATIONS)
        with open(path + ".pt2", "wb") as f:
            f.write(mutation(rng, entries_of(base)))
        cases.append({"name": f"{i}:{mutation.__name__}({base})", "kind": "package", "path": path + ".pt2"})
    return cases


def run_batch(cases, folder, cache):
    listing = os.path.join(folder, "cases.json")
    with open(listing, "w") as f:
        json.dump(cases, f)
    env = dict(os.environ, AOTIRT_CACHE=cache, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(aotirt.__file__)), os.environ.get("PYTHONPATH", "")]))
    try:
        proc = subprocess.run([sys.executable, os.path.join(SUPPORT, "fuzz_worker.py"), listing], capture_output=True,
                              text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        started = [ln for ln in (e.stdout or b"").decode(errors="replace").splitlines() if ln.startswith("start ")]
        pytest.fail(f"hang: {started[-1][6:] if started else 'before the first case'} (seed {SEED})")
    lines = proc.stdout.splitlines()
    if proc.returncode != 0:
        started = [ln for ln in lines if ln.startswith("start ")]
        pytest.fail(f"crash (exit {proc.returncode}) in case {started[-1][6:] if started else '?'} "
                    f"(seed {SEED}):\n{proc.stderr[-3000:]}")
    records = [json.loads(ln) for ln in lines if ln.startswith("{")]
    return records[:-1], records[-1]


def test_fuzz_packages_and_blobs(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTIRT_CACHE", str(tmp_path / "base-cache"))
    libraries = blob_libraries()
    rng = random.Random(SEED)
    deadline = time.monotonic() + SECONDS
    outcomes, done = {}, 0
    while time.monotonic() < deadline or done == 0:
        folder = tmp_path / f"batch{done}"
        folder.mkdir()
        cache = str(tmp_path / f"cache{done}")
        cases = make_cases(rng, str(folder), BATCH, done, libraries)
        results, usage = run_batch(cases, str(folder), cache)
        assert len(results) == len(cases), (results, cases)
        for case, result in zip(cases, results):
            assert result["outcome"] in ALLOWED, (case["name"], result, SEED)
            assert result["finite"], ("NaN output", case["name"], SEED)
            outcomes[result["outcome"]] = outcomes.get(result["outcome"], 0) + 1
        # Nothing left behind: no open files, no half-written extraction.
        fds_before, fds_after = usage["fds"]
        assert fds_after <= fds_before, ("file descriptors leaked", usage, SEED)
        leftovers = [d for d in (os.listdir(os.path.join(cache, "pt2")) if os.path.isdir(os.path.join(cache, "pt2"))
                                 else []) if d.startswith(".")]
        assert not leftovers, ("staging folders left behind", leftovers, SEED)
        done += len(cases)
    print(f"fuzz: {done} cases, seed {SEED}: {outcomes}")
    assert outcomes.get("AotiError", 0) + outcomes.get("ValueError", 0) > done // 2
