"""bench/affinity.py, on the CPU: the CPU lists and PCI bus ids it reads,
and the pinning itself, against a sysfs-shaped folder of real files (this
machine's own sysfs has no GPU). The process's CPU set is put back after
each test that changes it."""

import os
import sys

import pytest

from support.helpers import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
affinity = pytest.importorskip("affinity")

BUS_ID = "00000000:3B:00.0"        # as CUDA writes one (an 8-digit domain, capitals)


@pytest.fixture
def restored_affinity():
    before = os.sched_getaffinity(0)
    yield sorted(before)
    os.sched_setaffinity(0, before)


def fake_device(tmp_path, cpulist, node="0\n"):
    folder = tmp_path / "0000:3b:00.0"
    folder.mkdir()
    (folder / "local_cpulist").write_text(cpulist + "\n")
    if node is not None:
        (folder / "numa_node").write_text(node)
    return str(tmp_path)


def test_cpu_lists_read_and_written():
    assert affinity.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert affinity.parse_cpulist("5") == [5]
    assert affinity.format_cpulist([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert affinity.format_cpulist([4]) == "4"
    with pytest.raises(ValueError):
        affinity.parse_cpulist("7-3")
    with pytest.raises(ValueError):
        affinity.parse_cpulist("a-b")


def test_bus_ids_as_sysfs_names_them():
    assert affinity.sysfs_name(BUS_ID) == "0000:3b:00.0"
    assert affinity.sysfs_name("0000:1a:00.1") == "0000:1a:00.1"
    with pytest.raises(ValueError, match="not a PCI bus id"):
        affinity.sysfs_name("GPU-0")


def test_local_cpus_and_node_from_sysfs(tmp_path):
    sysfs = fake_device(tmp_path, "0-7,16-23", node="1\n")
    assert affinity.local_cpus(BUS_ID, sysfs) == (list(range(8)) + list(range(16, 24)), 1)
    (tmp_path / "0000:3b:00.0" / "numa_node").write_text("-1\n")  # what a one-node machine reports
    assert affinity.local_cpus(BUS_ID, sysfs)[1] is None


def test_pins_this_process_to_the_local_cpus_it_may_use(tmp_path, restored_affinity):
    allowed = restored_affinity
    local = allowed[:1]
    row = affinity.pin_to_gpu(0, BUS_ID, fake_device(tmp_path, affinity.format_cpulist(local + [10_000])))
    assert row["pinned"] and row["cpus"] == affinity.format_cpulist(local)
    assert sorted(os.sched_getaffinity(0)) == local
    assert "local to the GPU (00000000:3B:00.0, NUMA node 0)" in row["note"]


def test_no_local_cpu_it_may_use_leaves_the_process_alone(tmp_path, restored_affinity):
    row = affinity.pin_to_gpu(0, BUS_ID, fake_device(tmp_path, "10000-10003"))
    assert not row["pinned"] and "none of the GPU's local CPUs (10000-10003)" in row["note"]
    assert sorted(os.sched_getaffinity(0)) == restored_affinity


def test_an_unknown_device_or_an_opt_out_is_said_and_changes_nothing(tmp_path, monkeypatch, restored_affinity):
    row = affinity.pin_to_gpu(0, BUS_ID, str(tmp_path))            # no such device folder
    assert not row["pinned"] and row["note"].startswith("not pinned: the GPU's local CPUs are unknown")
    monkeypatch.setenv("AOTIRT_BENCH_PIN", "0")
    row = affinity.pin_to_gpu(0, BUS_ID, fake_device(tmp_path, "0"))
    assert row == {"case": "affinity", "device": 0, "pinned": False,
                   "allowed": affinity.format_cpulist(restored_affinity), "note": "not pinned (AOTIRT_BENCH_PIN=0)"}
    assert sorted(os.sched_getaffinity(0)) == restored_affinity


def test_remote_pins_to_the_cpus_the_gpu_does_not_have(tmp_path, monkeypatch, restored_affinity):
    allowed = restored_affinity
    monkeypatch.setenv("AOTIRT_BENCH_PIN", "remote")
    if len(allowed) > 1:
        row = affinity.pin_to_gpu(0, BUS_ID, fake_device(tmp_path, str(allowed[0])))
        assert row["pinned"] and sorted(os.sched_getaffinity(0)) == allowed[1:]
        assert "those not local to the GPU" in row["note"]
        os.sched_setaffinity(0, allowed)
        (tmp_path / "0000:3b:00.0").rename(tmp_path / "used")
    row = affinity.pin_to_gpu(0, BUS_ID, fake_device(tmp_path, affinity.format_cpulist(allowed)))
    assert not row["pinned"] and row["note"].startswith("not pinned: every CPU this process may use")
