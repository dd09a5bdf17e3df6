"""`compare.sh` picks, fetches, verifies and unpacks the build for the GPU it finds (§A.6).

Stand-in `nvidia-smi`, `ldconfig` and `getconf` on PATH play the machine; a loopback release
serves the real CPU `llama-server` under the CUDA and ROCm asset names too (behind a wrapper
that records its LD_LIBRARY_PATH), and a cudart archive holding a dummy `libcudart.so.13`,
with their real SHA-256s through the OVERBRAINER_LLAMA_CPP* variables.
"""

from __future__ import annotations

import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from overbrainer.devtools.stub_provider import open_stub
from tests.compare_support import RUN_ID, make_compare_project, scripted_judge
from tests.llama_support import LlamaTools, served_directory, sha256_of
from tests.pipeline_support import overbrainer

TAG = "b0gpu"
CUDA_ASSET = "ubuntu-cuda-13.4-x64"
ROCM_ASSET = "ubuntu-rocm-10.0-x64"
CUDART = f"cudart-llama-{TAG}-bin-{CUDA_ASSET}"
OLD_LIBS = "/old/lib"
WRAPPER = """#!/bin/sh
# Records the library path the job gave the server, then runs the real (CPU) server.
printf '%s\\n' "${LD_LIBRARY_PATH:-}" > ld_library_path.txt
exec "$(dirname "$0")/llama-server.bin" "$@"
"""
ROCM_LIBS = (
    "\tlibamdhip64.so.7 (libc6,x86-64) => /opt/rocm/lib/libamdhip64.so.7\n"
    "\tlibrocblas.so.5 (libc6,x86-64) => /opt/rocm/lib/librocblas.so.5\n"
    "\tlibhipblas.so.3 (libc6,x86-64) => /opt/rocm/lib/libhipblas.so.3\n"
)
SMI_13 = "| NVIDIA-SMI 580.65   Driver Version: 580.65   CUDA Version: 13.4     |\n"
SMI_12 = "| NVIDIA-SMI 550.54   Driver Version: 550.54   CUDA Version: 12.8     |\n"
GPU_NAME = "NVIDIA Stand-in 48GB"


@attrs.frozen
class GpuRelease:
    """A served release with the CPU, CUDA and ROCm assets and the cudart archive."""

    url: str
    binary_sha256: str
    cudart_sha256: str

    def env(self) -> dict[str, str]:
        """Every asset's real SHA-256: the CUDA and ROCm assets are the CPU archive renamed."""
        return {
            "OVERBRAINER_LLAMA_CPP": TAG,
            "OVERBRAINER_LLAMA_CPP_URL": self.url,
            "OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256": self.binary_sha256,
            "OVERBRAINER_LLAMA_CPP_UBUNTU_CUDA_X64_SHA256": self.binary_sha256,
            "OVERBRAINER_LLAMA_CPP_UBUNTU_ROCM_X64_SHA256": self.binary_sha256,
            "OVERBRAINER_LLAMA_CPP_CUDART_X64_SHA256": self.cudart_sha256,
        }


@pytest.fixture(scope="module")
def gpu_release(
    llama_tools: LlamaTools, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GpuRelease]:
    """The release, packed once for this module and served on 127.0.0.1."""
    directory = tmp_path_factory.mktemp("gpu-release")
    assets = directory / "releases" / "download" / TAG
    assets.mkdir(parents=True)
    wrapper = directory / "llama-server"
    wrapper.write_text(WRAPPER, encoding="utf-8")
    wrapper.chmod(0o755)
    binary = assets / f"llama-{TAG}-bin-ubuntu-x64.tar.gz"
    with tarfile.open(binary, "w:gz", compresslevel=1) as tar:
        tar.add(wrapper, arcname=f"llama-{TAG}/llama-server")
        tar.add(llama_tools.bin / "llama-server", arcname=f"llama-{TAG}/llama-server.bin")
    for asset in (CUDA_ASSET, ROCM_ASSET):
        os.link(binary, assets / f"llama-{TAG}-bin-{asset}.tar.gz")
    library = directory / "libcudart.so.13"
    library.write_bytes(b"not a real library: nothing loads it, the server is static\n")
    cudart = assets / f"{CUDART}.tar.gz"
    with tarfile.open(cudart, "w:gz") as tar:
        tar.add(library, arcname=f"llama-{TAG}/libcudart.so.13")
    with served_directory(directory) as url:
        yield GpuRelease(url, sha256_of(binary), sha256_of(cudart))


def _tool(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(0o755)


def _prints(output: str) -> str:
    return f"cat <<'OUT'\n{output}OUT\n"


@attrs.frozen
class Ran:
    """What one compare left: its exit, stderr, job log, hardware and the server's libraries."""

    code: int
    stderr: str
    job_log: str
    hardware: dict[str, object] | None
    library_path: str | None
    cache: Path


async def _compare(
    tmp_path: Path,
    release: GpuRelease,
    *,
    smi: str,
    libs: str = "",
    kfd: bool = False,
    extra: dict[str, str] | None = None,
) -> Ran:
    """`overbrainer compare` of one question with `smi` as nvidia-smi's script body."""
    root = make_compare_project(tmp_path / "p", questions=1)
    bin_dir = tmp_path / "standins"
    bin_dir.mkdir()
    _tool(bin_dir, "nvidia-smi", smi)
    _tool(bin_dir, "ldconfig", _prints(libs))
    _tool(bin_dir, "getconf", _prints("glibc 2.39\n"))
    device = tmp_path / "kfd"
    if kfd:
        device.write_text("")
    cache = tmp_path / "cache"
    env = {
        **release.env(),
        "OVERBRAINER_CACHE": str(cache),
        "OVERBRAINER_TEST_POLL_S": "0.2",
        "OVERBRAINER_COMPARE_KFD": str(device),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "LD_LIBRARY_PATH": OLD_LIBS,
        **(extra or {}),
    }
    async with open_stub(scripted_judge) as stub:
        result = await overbrainer(root, "compare", url=stub.url, env=env, limit=240)
    [folder] = (root / "runs" / RUN_ID / "compares").iterdir()
    hardware = folder / "hardware.json"
    library_path = folder / "ld_library_path.txt"
    return Ran(
        result.code,
        result.stderr,
        (folder / "job.log").read_text(),
        json.loads(hardware.read_text()) if hardware.exists() else None,
        library_path.read_text().strip() if library_path.exists() else None,
        cache / "llama.cpp" / TAG,
    )


def _warnings(ran: Ran) -> list[str]:
    return [line for line in ran.job_log.splitlines() if line.startswith("compare: warning: ")]


SMI_13_SCRIPT = (
    'case "$*" in *--query-gpu=name*) echo "'
    + GPU_NAME
    + '" ;; *) '
    + _prints(SMI_13)
    + " ;; esac\n"
)
"""nvidia-smi of a CUDA 13.4 driver: its header, or the GPU's name for `--query-gpu=name`."""


async def test_cuda_13_fetches_the_cuda_build_and_cudart(
    tmp_path: Path, gpu_release: GpuRelease
) -> None:
    ran = await _compare(tmp_path, gpu_release, smi=SMI_13_SCRIPT)
    assert ran.code == 0, ran.stderr
    assert _warnings(ran) == []
    server_dir = ran.cache / CUDA_ASSET
    cudart_dir = ran.cache / CUDART
    assert (server_dir / "llama-server.bin").is_file()
    assert (cudart_dir / "libcudart.so.13").read_bytes().startswith(b"not a real library")
    assert ran.library_path == f"{cudart_dir}:{server_dir}:{OLD_LIBS}"
    assert ran.hardware is not None
    assert (ran.hardware["build"], ran.hardware["gpus"]) == (CUDA_ASSET, [GPU_NAME])
    assert list(ran.cache.glob("*.tar.gz*")) == []
    assert not (ran.cache / "ubuntu-x64").exists()


async def test_a_cudart_archive_of_another_sha256_is_refused(
    tmp_path: Path, gpu_release: GpuRelease
) -> None:
    wrong = "0" * 64
    extra = {"OVERBRAINER_LLAMA_CPP_CUDART_X64_SHA256": wrong}
    ran = await _compare(tmp_path, gpu_release, smi=SMI_13_SCRIPT, extra=extra)
    assert ran.code == 1
    url = f"{gpu_release.url}/releases/download/{TAG}/{CUDART}.tar.gz"
    message = f"compare: {url} has SHA-256 {gpu_release.cudart_sha256}, expected {wrong}: not used"
    assert message in ran.job_log.splitlines()
    assert sorted(p.name for p in ran.cache.iterdir()) == [CUDA_ASSET]
    assert ran.library_path is None


async def test_cuda_12_keeps_the_cpu_build_with_the_warning(
    tmp_path: Path, gpu_release: GpuRelease
) -> None:
    ran = await _compare(tmp_path, gpu_release, smi=_prints(SMI_12))
    assert ran.code == 0, ran.stderr
    assert _warnings(ran) == [
        "compare: warning: the NVIDIA driver supports CUDA 12.8, below the CUDA 13.4 of "
        f"llama.cpp {TAG}: using the CPU build ubuntu-x64"
    ]
    assert ran.library_path == f"{ran.cache / 'ubuntu-x64'}:{OLD_LIBS}"
    assert (
        ran.hardware is not None
        and ran.hardware["build"] == "ubuntu-x64"
        and ran.hardware["gpus"] == []
    )
    assert sorted(p.name for p in ran.cache.iterdir()) == ["ubuntu-x64"]


async def test_unparseable_nvidia_smi_keeps_the_cpu_build_with_a_warning(
    tmp_path: Path, gpu_release: GpuRelease
) -> None:
    ran = await _compare(tmp_path, gpu_release, smi=_prints("NVIDIA-SMI has failed oddly\n"))
    assert ran.code == 0, ran.stderr
    assert _warnings(ran) == [
        "compare: warning: nvidia-smi shows no CUDA version: using the CPU build ubuntu-x64"
    ]
    assert ran.hardware is not None and ran.hardware["build"] == "ubuntu-x64"


async def test_no_gpu_keeps_the_cpu_build_silently(tmp_path: Path, gpu_release: GpuRelease) -> None:
    # `command not found`: the exit status a missing nvidia-smi gives.
    ran = await _compare(tmp_path, gpu_release, smi="exit 127\n")
    assert ran.code == 0, ran.stderr
    assert _warnings(ran) == []
    assert "warning" not in ran.stderr
    assert ran.library_path == f"{ran.cache / 'ubuntu-x64'}:{OLD_LIBS}"
    assert ran.hardware is not None and ran.hardware["build"] == "ubuntu-x64"


async def test_rocm_with_missing_libraries_keeps_the_cpu_build_with_a_warning(
    tmp_path: Path, gpu_release: GpuRelease
) -> None:
    libs = ROCM_LIBS.splitlines(keepends=True)[1]
    ran = await _compare(tmp_path, gpu_release, smi="exit 127\n", libs=libs, kfd=True)
    assert ran.code == 0, ran.stderr
    assert _warnings(ran) == [
        "compare: warning: an AMD GPU is present, but ROCm lacks libamdhip64.so.7 "
        "libhipblas.so.3: using the CPU build ubuntu-x64. On Ubuntu: apt install libamdhip64-7 "
        "libhipblas3"
    ]
    assert ran.hardware is not None and ran.hardware["build"] == "ubuntu-x64"


async def test_rocm_with_its_libraries_fetches_the_rocm_build(
    tmp_path: Path, gpu_release: GpuRelease
) -> None:
    ran = await _compare(tmp_path, gpu_release, smi="exit 127\n", libs=ROCM_LIBS, kfd=True)
    assert ran.code == 0, ran.stderr
    assert _warnings(ran) == []
    assert ran.library_path == f"{ran.cache / ROCM_ASSET}:{OLD_LIBS}"
    assert ran.hardware is not None and ran.hardware["build"] == ROCM_ASSET
    assert sorted(p.name for p in ran.cache.iterdir()) == [ROCM_ASSET]
