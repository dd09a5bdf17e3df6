"""`pick_build` under `sh` with stand-in `nvidia-smi`, `ldconfig`, `getconf` (§A.6)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from overbrainer.compare.job_script import compare_script, pick_build_script
from overbrainer.targets.llama_cpp import helpers_script, resolve_pin
from tests.permissions import permissions_hold

ROCM_LIBS = (
    "\tlibamdhip64.so.7 (libc6,x86-64) => /opt/rocm/lib/libamdhip64.so.7\n"
    "\tlibrocblas.so.5 (libc6,x86-64) => /opt/rocm/lib/librocblas.so.5\n"
    "\tlibhipblas.so.3 (libc6,x86-64) => /opt/rocm/lib/libhipblas.so.3\n"
)


def _tool(bin_dir: Path, name: str, output: str | None) -> None:
    """A stand-in program printing `output`, or failing when None."""
    path = bin_dir / name
    body = "exit 1\n" if output is None else f"cat <<'OUT'\n{output}OUT\n"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _pick(
    tmp_path: Path,
    *,
    smi: str | None = None,
    libs: str = "",
    glibc: str | None = "glibc 2.39\n",
    kfd: Path | None = None,
    machine: str = "Linux x86_64",
    code: int = 0,
    prefix: Sequence[str] = (),
) -> tuple[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    _tool(bin_dir, "uname", machine + "\n")
    _tool(bin_dir, "nvidia-smi", smi)
    _tool(bin_dir, "ldconfig", libs)
    _tool(bin_dir, "getconf", glibc)
    _tool(bin_dir, "ldd", None)
    env = {**resolve_pin({}).job_env(), "PATH": f"{bin_dir}:/usr/bin:/bin"}
    env["OVERBRAINER_COMPARE_KFD"] = str(kfd or tmp_path / "no-kfd")
    script = "\n".join(
        [
            "SCRIPT_NAME=compare",
            helpers_script(),
            pick_build_script(),
            'pick_build; printf "%s %s %s %s\\n" "$ASSET" "$DIGEST" "${CUDART:--}" '
            '"${CUDART_DIGEST:--}"',
        ]
    )
    done = subprocess.run(
        [*prefix, "sh", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == code, done.stderr
    return done.stdout.strip(), done.stderr


SMI_13 = "| NVIDIA-SMI 580.65   Driver Version: 580.65   CUDA Version: 13.4     |\n"
SMI_12 = "| NVIDIA-SMI 550.54   Driver Version: 550.54   CUDA Version: 12.8     |\n"


def test_no_gpu_uses_the_cpu_build_silently(tmp_path: Path) -> None:
    out, err = _pick(tmp_path)
    pin = resolve_pin({})
    assert out == f"ubuntu-x64 {pin.values['OVERBRAINER_LLAMA_CPP_UBUNTU_X64_SHA256']} - -"
    assert err == ""


def test_nvidia_with_a_recent_driver_uses_the_cuda_build_and_cudart(tmp_path: Path) -> None:
    out, err = _pick(tmp_path, smi=SMI_13)
    v = resolve_pin({}).values
    assert out.split() == [
        "ubuntu-cuda-13.4-x64",
        v["OVERBRAINER_LLAMA_CPP_UBUNTU_CUDA_X64_SHA256"],
        "cudart-llama-b11320-bin-ubuntu-cuda-13.4-x64",
        v["OVERBRAINER_LLAMA_CPP_CUDART_X64_SHA256"],
    ]
    assert err == ""


def test_an_old_nvidia_driver_falls_back_with_one_warning(tmp_path: Path) -> None:
    out, err = _pick(tmp_path, smi=SMI_12)
    assert out.split()[0] == "ubuntu-x64"
    assert err == (
        "compare: warning: the NVIDIA driver supports CUDA 12.8, below the CUDA 13.4 of "
        "llama.cpp b11320: using the CPU build ubuntu-x64\n"
    )


def test_unparseable_nvidia_smi_falls_back(tmp_path: Path) -> None:
    out, err = _pick(tmp_path, smi="No devices were found\n")
    assert out.split()[0] == "ubuntu-x64"
    assert err.count("compare: warning: ") == 1


def test_an_old_glibc_keeps_the_cpu_build(tmp_path: Path) -> None:
    out, err = _pick(tmp_path, smi=SMI_13, glibc="glibc 2.35\n")
    assert out.split()[0] == "ubuntu-x64"
    assert err == (
        "compare: warning: glibc 2.35 is older than the glibc 2.38 the ubuntu-cuda-13.4-x64 "
        "build needs: using the CPU build ubuntu-x64\n"
    )


def test_an_unknown_glibc_gives_the_gpu_build_its_chance(tmp_path: Path) -> None:
    out, _ = _pick(tmp_path, smi=SMI_13, glibc=None)
    assert out.split()[0] == "ubuntu-cuda-13.4-x64"


def test_amd_with_rocm_uses_the_rocm_build(tmp_path: Path) -> None:
    kfd = tmp_path / "kfd"
    kfd.write_text("")
    out, err = _pick(tmp_path, libs=ROCM_LIBS, kfd=kfd)
    v = resolve_pin({}).values
    assert out.split()[:2] == [
        "ubuntu-rocm-10.0-x64",
        v["OVERBRAINER_LLAMA_CPP_UBUNTU_ROCM_X64_SHA256"],
    ]
    assert err == ""


def test_amd_without_the_rocm_libraries_names_only_the_missing_ones(tmp_path: Path) -> None:
    kfd = tmp_path / "kfd"
    kfd.write_text("")
    libs = ROCM_LIBS.splitlines(keepends=True)[0]
    out, err = _pick(tmp_path, libs=libs, kfd=kfd)
    assert out.split()[0] == "ubuntu-x64"
    assert err == (
        "compare: warning: an AMD GPU is present, but ROCm lacks librocblas.so.5 "
        "libhipblas.so.3: using the CPU build ubuntu-x64. On Ubuntu: apt install librocblas5 "
        "libhipblas3\n"
    )


def test_amd_without_access_to_kfd_mentions_the_render_group(tmp_path: Path) -> None:
    kfd = tmp_path / "kfd"
    kfd.write_text("")
    kfd.chmod(0o400)
    out, err = _pick(tmp_path, libs=ROCM_LIBS, kfd=kfd, prefix=permissions_hold())
    assert out.split()[0] == "ubuntu-x64"
    assert "render group" in err and err.count("\n") == 1


def test_compare_script_is_valid_sh() -> None:
    done = subprocess.run(["sh", "-n", "-c", compare_script()], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_arm64_linux_uses_the_arm64_builds(tmp_path: Path) -> None:
    v = resolve_pin({}).values
    out, err = _pick(tmp_path, machine="Linux aarch64")
    assert out.split()[:2] == ["ubuntu-arm64", v["OVERBRAINER_LLAMA_CPP_UBUNTU_ARM64_SHA256"]]
    out, err = _pick(tmp_path, machine="Linux aarch64", smi=SMI_13)
    assert out.split() == [
        "ubuntu-cuda-13.4-arm64",
        v["OVERBRAINER_LLAMA_CPP_UBUNTU_CUDA_ARM64_SHA256"],
        "cudart-llama-b11320-bin-ubuntu-cuda-13.4-arm64",
        v["OVERBRAINER_LLAMA_CPP_CUDART_ARM64_SHA256"],
    ]
    assert err == ""


def test_an_amd_gpu_on_arm64_stays_on_the_cpu_build(tmp_path: Path) -> None:
    kfd = tmp_path / "kfd"
    kfd.write_text("")
    out, err = _pick(tmp_path, machine="Linux aarch64", libs=ROCM_LIBS, kfd=kfd)
    assert out.split()[0] == "ubuntu-arm64"
    assert err == (
        "compare: warning: an AMD GPU is present, but llama.cpp b11320 has no ROCm build for "
        "arm64: using the CPU build ubuntu-arm64\n"
    )


def test_apple_silicon_uses_the_metal_build(tmp_path: Path) -> None:
    out, err = _pick(tmp_path, machine="Darwin arm64", smi=SMI_13)
    v = resolve_pin({}).values
    assert out.split() == ["macos-arm64", v["OVERBRAINER_LLAMA_CPP_MACOS_ARM64_SHA256"], "-", "-"]
    assert err == ""


def test_another_platform_is_refused(tmp_path: Path) -> None:
    out, err = _pick(tmp_path, machine="FreeBSD amd64", code=1)
    assert out == ""
    assert err == (
        "compare: llama.cpp b11320 has no prebuilt llama-server for FreeBSD amd64 "
        "(Linux x86_64, Linux aarch64 and Darwin arm64 only)\n"
    )
