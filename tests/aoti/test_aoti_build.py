"""tests/aoti/build.py's own machinery on the CPU, without torch: the time
limit that kills a model's whole process group, and the zoo's index."""

import os
import sys
import time

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "aoti"))
import build  # noqa: E402
import zoo_index  # noqa: E402


def test_a_model_past_its_time_limit_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "grandchild-survived"
    # A child that starts a grandchild (as inductor's compile workers are)
    # and both sleep past the limit; the grandchild would write the marker.
    grandchild = f"import time; time.sleep(3); open({str(marker)!r}, 'w')"
    code = ("import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
            "print('started', flush=True)\n"
            "time.sleep(30)\n")
    start = time.time()
    rc, output = build.run_limited([sys.executable, "-c", code], timeout=1)
    assert rc is None and time.time() - start < 10
    assert "started" in output and "killed after 1 s" in output
    time.sleep(4)
    assert not marker.exists()


def test_a_failing_model_gives_its_status_and_output():
    rc, output = build.run_limited([sys.executable, "-c", "import sys; print('why'); sys.exit(3)"], timeout=30)
    assert rc == 3 and output.strip() == "why"


def test_the_zoo_index_reads_the_zoo_without_torch():
    names = zoo_index.zoo_names()
    assert {"resnet18", "mobilenet_v2", "whisper_encoder", "llama_bf16", "sdpa_bf16", "llama_decode_f32"} <= set(names)
    # Issue 18's.
    assert {"resnet50", "efficientnet_b0", "convnext_tiny", "vit_b_16", "swin_t", "bert_f32", "gpt2_f16",
            "qwen2_gqa_bf16", "gemma_decode_f32", "whisper_decoder_f32", "mixtral_moe_f32", "topk_sampling",
            "top_p_argsort", "cond_branches", "scatter_ops", "int4_linear_bf16"} <= set(names)
    assert zoo_index.awaiting_shims() == {}
    # Every file the models are made of is in the cache key.
    here = os.path.join(REPO, "tests", "aoti")
    imported = {"zoo.py"} | {f"{line.split()[1]}.py" for line in open(os.path.join(here, "zoo.py"))
                             if line.startswith("from ") and os.path.exists(os.path.join(here, f"{line.split()[1]}.py"))}
    assert imported <= set(zoo_index.SOURCES) and all(os.path.exists(os.path.join(here, f)) for f in zoo_index.SOURCES)
    assert len(names) == len(set(names))
    assert "torch" not in sys.modules
    key = zoo_index.cache_key("cuda")
    assert len(key) == 16 and key != zoo_index.cache_key("cpu")
