"""How the tests find a compiled model (test_aoti_models.model_folder): a
partial check (AOTIRT_ZOO_ONLY, scripts/gpu-check.sh) compiles its zoo
models alone, and a test outside the zoo that reads another model compiles
that one when it asks. Run against a stand-in for tests/aoti/build.py that
writes a model's folder as the real one does (meta.json last) and logs each
request, so no torch is needed."""

import json
import os
import sys

import pytest

import test_aoti_models

STAND_IN_BUILD = r'''
import argparse, json, os
parser = argparse.ArgumentParser()
parser.add_argument("--device")
parser.add_argument("--cache")
parser.add_argument("--only", default="")
parser.add_argument("--jobs")
args = parser.parse_args()
with open(os.path.join(args.cache, "requests.log"), "a") as log:
    log.write((args.only or "(all)") + "\n")
root = os.path.join(args.cache, "key-" + args.device)
names = args.only.split(",") if args.only else ["mlp", "int_ops"]
for name in names:
    if name == "broken":
        continue  # a failed compile leaves no meta.json
    os.makedirs(os.path.join(root, name), exist_ok=True)
    with open(os.path.join(root, name, "meta.json"), "w") as f:
        json.dump({"name": name, "device": args.device}, f)
print(f"cache: {root} (0 cached, {len(names)} built, 0 failed, 0 left)")
'''


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """The cache folder; model_folder builds through the stand-in into it."""
    script = tmp_path / "build.py"
    script.write_text(STAND_IN_BUILD)
    cache = tmp_path / "cache"
    monkeypatch.setenv("AOTIRT_TORCH_PYTHON", sys.executable)
    monkeypatch.delenv("AOTIRT_ZOO_ONLY", raising=False)
    monkeypatch.setattr(test_aoti_models, "BUILD", str(script))
    monkeypatch.setattr(test_aoti_models, "CACHE", str(cache))
    monkeypatch.setattr(test_aoti_models, "_roots", {})
    return cache


def requests(cache):
    return (cache / "requests.log").read_text().split()


def test_a_partial_check_builds_a_model_outside_its_zoo_when_a_test_reads_it(stand_in, monkeypatch):
    monkeypatch.setenv("AOTIRT_ZOO_ONLY", "resnet18,gpt2_f16")
    folder, meta = test_aoti_models.model_folder("mlp_blob", "cpu")
    assert meta == {"name": "mlp_blob", "device": "cpu"}
    assert folder == os.path.join(str(stand_in), "key-cpu", "mlp_blob")
    assert requests(stand_in) == ["resnet18,gpt2_f16", "mlp_blob"]
    # A zoo model of the partial check is built by the first request alone.
    _, meta = test_aoti_models.model_folder("resnet18", "cpu")
    assert meta["name"] == "resnet18" and requests(stand_in) == ["resnet18,gpt2_f16", "mlp_blob"]


def test_a_model_that_does_not_compile_fails_the_test_with_its_name(stand_in, monkeypatch):
    monkeypatch.setenv("AOTIRT_ZOO_ONLY", "resnet18")
    with pytest.raises(pytest.fail.Exception, match="broken did not compile for cuda"):
        test_aoti_models.model_folder("broken", "cuda")
    assert requests(stand_in) == ["resnet18", "broken"]


def test_a_whole_check_builds_everything_once_and_asks_no_more(stand_in):
    _, meta = test_aoti_models.model_folder("int_ops", "cpu")
    assert meta["name"] == "int_ops"
    with pytest.raises(pytest.fail.Exception, match="absent did not compile for cpu"):
        test_aoti_models.model_folder("absent", "cpu")
    assert requests(stand_in) == ["(all)"]
    assert json.loads((stand_in / "key-cpu" / "mlp" / "meta.json").read_text())["name"] == "mlp"
