"""`hardware.json`: which llama.cpp build served the child, on which GPUs or CPU (§A.6, §A.12)."""

from __future__ import annotations

import attrs

from overbrainer.model import codec


@codec.record("hardware", strict=False)
@attrs.frozen
class Hardware(codec.JsonRecord):
    """The build, the GPUs it used (in order) and the CPU."""

    build: str
    gpus: tuple[str, ...] = ()
    cpu: str | None = None

    @property
    def has_gpu(self) -> bool:
        """Whether the build runs on a GPU (CUDA, ROCm, Metal)."""
        if self.build.startswith(("ubuntu-cuda-", "ubuntu-rocm-", "macos-")):
            return True
        if self.build in ("ubuntu-x64", "ubuntu-arm64"):
            return False
        return bool(self.gpus)

    def describe(self) -> str:
        """`1 x NVIDIA A40 (ubuntu-cuda-13.4-x64)`, or `<cpu>, CPU (<build>)` without a GPU."""
        if not self.gpus:
            return f"{self.cpu or 'unknown CPU'}, CPU ({self.build})"
        counts: dict[str, int] = {}
        for gpu in self.gpus:
            counts[gpu] = counts.get(gpu, 0) + 1
        listed = " + ".join(f"{n} x {name}" for name, n in counts.items())
        return f"{listed} ({self.build})"
