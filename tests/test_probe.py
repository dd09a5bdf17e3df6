"""The target probe's parser, pinned to the reference's literal examples."""

from __future__ import annotations

import pytest

from overbrainer.system.probe import parse_probe, probe_script

GIB = 1024**3


def probe(**parts: str) -> str:
    return "\n".join(f"@{name}\n{body}" for name, body in parts.items()) + "\n"


def test_the_a100_line() -> None:
    sample = parse_probe(
        probe(gpu="0, NVIDIA A100-SXM4-80GB, 87, 40960, 81920, 64, 312.45, 400.00"), at=1.0
    )
    (gpu,) = sample.gpus
    assert gpu.index == 0
    assert gpu.name == "NVIDIA A100-SXM4-80GB"
    assert gpu.utilization == pytest.approx(0.87)
    assert (gpu.memory_used_bytes, gpu.memory_total_bytes) == (40 * GIB, 80 * GIB)
    assert (gpu.temperature_celsius, gpu.power_watts, gpu.power_limit_watts) == (64, 312.45, 400)


def test_not_available_figures_names_with_commas_and_no_devices() -> None:
    sample = parse_probe(
        probe(gpu="1, Tesla T4, rev, 2, [N/A], 1024, 15360, [N/A], [Not Supported], 70.00"),
        at=1.0,
    )
    (gpu,) = sample.gpus
    assert gpu.index == 1
    assert gpu.name == "Tesla T4,rev,2"
    assert gpu.utilization is None
    assert gpu.temperature_celsius is None and gpu.power_watts is None
    assert gpu.power_limit_watts == 70
    assert parse_probe(probe(gpu="No devices were found"), at=1.0).gpus == ()


def test_cgroup_v2_memory_example() -> None:
    sample = parse_probe(
        probe(
            meminfo="MemTotal: 134217728 kB\nMemAvailable: 100000000 kB",
            **{
                "memory.max": "68719476736",
                "memory.current": "34359738368",
                "memory.stat": "inactive_file 1073741824",
            },
        ),
        at=1.0,
    )
    assert sample.memory is not None
    assert sample.memory.used_bytes == 31 * GIB
    assert sample.memory.limit_bytes == 64 * GIB


def test_cpu_max_quota_gives_cpus_and_marks_a_container() -> None:
    sample = parse_probe(
        probe(loadavg="3.5 2.0 1.0 1/100 42", nproc="64", **{"cpu.max": "800000 100000"}), at=1.0
    )
    assert sample.cpu is not None
    assert sample.cpu.cpus == 8
    assert sample.cpu.container
    assert sample.cpu.load1 == 3.5
    assert sample.cpu.usage is None


def test_proc_stat_usage_between_two_samples() -> None:
    first = parse_probe(probe(stat="cpu 100 0 100 800 0 0 0 0 0 0", nproc="2"), at=1.0)
    second = parse_probe(
        probe(stat="cpu 200 0 200 1400 0 0 0 0 0 0", nproc="2"), at=2.0, previous=first
    )
    assert second.cpu is not None
    assert second.cpu.usage == pytest.approx(0.25)
    assert not second.cpu.container


def test_network_disks_are_shared_and_mounts_keep_spaces() -> None:
    header = "Filesystem Type 1024-blocks Used Available Capacity Mounted on"
    sample = parse_probe(
        probe(
            **{
                "df.run": f"{header}\nserver:/export nfs4 1000 400 600 40% /mnt/my data",
                "df.root": f"{header}\n/dev/sda1 ext4 2000 1000 1000 50% /",
            }
        ),
        at=1.0,
    )
    run, root = sample.disks
    assert (run.mount, run.fstype, run.shared) == ("/mnt/my data", "nfs4", True)
    assert (run.size_bytes, run.used_bytes, run.available_bytes) == (
        1000 * 1024,
        400 * 1024,
        600 * 1024,
    )
    assert (root.mount, root.shared) == ("/", False)
    assert run.used_ratio() == pytest.approx(0.4)


def test_the_script_names_the_run_directory() -> None:
    script = probe_script("/work/runs/my run")
    assert "nvidia-smi --query-gpu=" in script
    assert "__RUN_DIR__" not in script
