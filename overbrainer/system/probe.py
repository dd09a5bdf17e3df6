"""The shell probe a target runs in one round trip, and the parser of its answer."""

from __future__ import annotations

import math
import shlex

from overbrainer.model.system_sample import Cpu, CpuTimes, Disk, Gpu, Memory, SystemSample

_MIB = 1024 * 1024
# cgroup v1 writes "no limit" as about 2**63; anything from 2**62 on means no limit.
_UNLIMITED = 1 << 62
_NETWORK_TYPES = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "lustre", "9p"}
)
_LOCAL_FUSE = frozenset({"fuse.fuse-overlayfs", "fuse.lxcfs", "fuse.gvfsd-fuse"})

_SCRIPT = r"""part() { printf '\n@%s\n' "$1"; }
limit=
command -v timeout >/dev/null 2>&1 && limit='timeout 5'
part gpu
if command -v nvidia-smi >/dev/null 2>&1; then
  $limit nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,power.limit --format=csv,noheader,nounits 2>/dev/null
fi
part loadavg; cat /proc/loadavg 2>/dev/null
part stat; head -n 1 /proc/stat 2>/dev/null
part uptime; cat /proc/uptime 2>/dev/null
part meminfo; grep -E '^(MemTotal|MemAvailable):' /proc/meminfo 2>/dev/null
part memory.max; cat /sys/fs/cgroup/memory.max 2>/dev/null
part memory.current; cat /sys/fs/cgroup/memory.current 2>/dev/null
part memory.stat; grep '^inactive_file ' /sys/fs/cgroup/memory.stat 2>/dev/null
part cpu.max; cat /sys/fs/cgroup/cpu.max 2>/dev/null
part cpu.stat; grep '^usage_usec ' /sys/fs/cgroup/cpu.stat 2>/dev/null
v1() { cat "/sys/fs/cgroup/$1/$2" 2>/dev/null || cat "/sys/fs/cgroup/cpu,cpuacct/$2" 2>/dev/null; }
part memory.limit_in_bytes; v1 memory memory.limit_in_bytes
part memory.usage_in_bytes; v1 memory memory.usage_in_bytes
part memory.stat.v1; grep '^total_inactive_file ' /sys/fs/cgroup/memory/memory.stat 2>/dev/null
part cpu.cfs_quota_us; v1 cpu cpu.cfs_quota_us
part cpu.cfs_period_us; v1 cpu cpu.cfs_period_us
part cpuacct.usage; v1 cpuacct cpuacct.usage
part nproc; nproc 2>/dev/null
disk() { $limit df -PkT -- "$1" 2>/dev/null || { [ "$?" -ne 124 ] && $limit df -Pk -- "$1" 2>/dev/null; }; }
part df.run; disk __RUN_DIR__
part df.root; disk /
exit 0
"""

Parts = dict[str, list[str]]


def probe_script(run_dir: str) -> str:
    """The `sh` script printing every part `parse_probe` reads; it always exits 0 within ~15 s."""
    return _SCRIPT.replace("__RUN_DIR__", shlex.quote(run_dir))


def parse_probe(output: str, at: float, previous: SystemSample | None = None) -> SystemSample:
    """The sample in a probe's answer received at `at`; CPU usage comes from `previous`."""
    parts = split_parts(output)
    disks: list[Disk] = []
    for name in ("df.run", "df.root"):
        disk = parse_df(parts.get(name, []))
        if disk is not None and all(seen.mount != disk.mount for seen in disks):
            disks.append(disk)
    before = previous.cpu.times if previous is not None and previous.cpu is not None else None
    gpus = tuple(g for g in (parse_gpu_line(line) for line in parts.get("gpu", [])) if g)
    return SystemSample(
        at=at,
        disks=tuple(disks),
        cpu=cpu_from_parts(parts, before),
        memory=memory_from_parts(parts),
        gpus=gpus,
    )


def split_parts(output: str) -> Parts:
    """The non-blank, trimmed lines of each `@name` part of `output`."""
    parts: Parts = {}
    current: str | None = None
    for raw in output.splitlines():
        line = raw.strip()
        if line.startswith("@"):
            current = line[1:]
            parts.setdefault(current, [])
        elif current is not None and line:
            parts[current].append(line)
    return parts


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _integer(token: str) -> int | None:
    try:
        return int(token)
    except ValueError:
        return None


def _first_token(lines: list[str], index: int = 0) -> str | None:
    if not lines:
        return None
    tokens = lines[0].split()
    return tokens[index] if len(tokens) > index else None


def _first_number(lines: list[str]) -> float | None:
    token = _first_token(lines)
    return None if token is None else _number(token)


def _first_integer(lines: list[str]) -> int | None:
    token = _first_token(lines)
    return None if token is None else _integer(token)


def is_shared(source: str, fstype: str | None) -> bool:
    """Whether a file system is a network one, whose figures are a whole cluster's."""
    if fstype is not None and (
        fstype in _NETWORK_TYPES or (fstype.startswith("fuse.") and fstype not in _LOCAL_FUSE)
    ):
        return True
    return ":" in source or source.startswith("mfs#")


def parse_df(lines: list[str]) -> Disk | None:
    """The file system of `df -PkT` (or `df -Pk`) output: a header, then one line."""
    if len(lines) < 2:
        return None
    header = lines[0].split()
    typed = len(header) > 1 and header[1] == "Type"
    fields = lines[1].split()
    if not fields:
        return None
    source, rest = fields[0], fields[1:]
    fstype: str | None = None
    if typed:
        if not rest:
            return None
        fstype, rest = rest[0], rest[1:]
    # A mount point may hold spaces: it is every token after the capacity column.
    if len(rest) < 5:
        return None
    figures = [_integer(token) for token in rest[:3]]
    size, used, available = figures
    if size is None or used is None or available is None:
        return None
    return Disk(
        mount=" ".join(rest[4:]),
        fstype=fstype,
        shared=is_shared(source, fstype),
        size_bytes=size * 1024,
        used_bytes=used * 1024,
        available_bytes=available * 1024,
    )


def _meminfo(parts: Parts, name: str) -> int | None:
    for line in parts.get("meminfo", []):
        if line.startswith(name):
            tokens = line.split()
            value = _integer(tokens[1]) if len(tokens) > 1 else None
            return None if value is None else value * 1024
    return None


def _cgroup_memory(parts: Parts, total: int | None, names: tuple[str, str, str]) -> Memory | None:
    max_part, current_part, stat_part = names
    limit = _first_integer(parts.get(max_part, []))
    if limit is None or limit >= _UNLIMITED:
        return None
    if total is not None:
        limit = min(limit, total)
    current = _first_integer(parts.get(current_part, []))
    if current is None:
        return None
    inactive_token = _first_token(parts.get(stat_part, []), 1)
    inactive = (_integer(inactive_token) if inactive_token is not None else None) or 0
    return Memory(used_bytes=max(current - inactive, 0), limit_bytes=limit)


def memory_from_parts(parts: Parts) -> Memory | None:
    """Memory from the cgroup parts (v2, then v1), else from `meminfo`."""
    total = _meminfo(parts, "MemTotal:")
    memory = _cgroup_memory(parts, total, ("memory.max", "memory.current", "memory.stat"))
    if memory is None:
        memory = _cgroup_memory(
            parts,
            total,
            ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat.v1"),
        )
    if memory is None and total is not None:
        available = _meminfo(parts, "MemAvailable:")
        if available is not None:
            memory = Memory(used_bytes=max(total - available, 0), limit_bytes=total)
    return memory


def _cgroup_cpu(parts: Parts) -> tuple[float | None, float | None] | None:
    """(quota in CPUs, usage seconds) of the container's cgroup; None outside one."""
    if parts.get("cpu.max"):
        tokens = parts["cpu.max"][0].split()
        quota = _number(tokens[0]) if tokens else None
        period = _number(tokens[1]) if len(tokens) > 1 else None
        usec_token = _first_token(parts.get("cpu.stat", []), 1)
        usec = _number(usec_token) if usec_token is not None else None
        cpus = quota / period if quota is not None and period is not None and period > 0 else None
        return cpus, None if usec is None else usec / 1e6
    quota = _first_number(parts.get("cpu.cfs_quota_us", []))
    period = _first_number(parts.get("cpu.cfs_period_us", []))
    if quota is None or period is None or quota <= 0 or period <= 0:
        return None
    nanos = _first_number(parts.get("cpuacct.usage", []))
    return quota / period, None if nanos is None else nanos / 1e9


def _proc_times(lines: list[str]) -> CpuTimes | None:
    if not lines or not lines[0].startswith("cpu"):
        return None
    numbers = [_number(token) for token in lines[0].split()[1:9]]
    values = [n for n in numbers if n is not None]
    if len(values) != len(numbers) or len(values) < 5:
        return None
    total = sum(values)
    if total <= 0:
        return None
    return CpuTimes(busy=total - values[3] - values[4], total=total, cgroup=False, cpus=None)


def cpu_usage(before: CpuTimes | None, now: CpuTimes | None) -> float | None:
    """Busy share between two counters of the same source and capacity; None otherwise."""
    if before is None or now is None or before.cgroup != now.cgroup or before.cpus != now.cpus:
        return None
    dt = now.total - before.total
    db = now.busy - before.busy
    if dt > 0 and db >= 0:
        return min(max(db / dt, 0.0), 1.0)
    return None


def _valid_cpus(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def cpu_from_parts(parts: Parts, before: CpuTimes | None) -> Cpu | None:
    """CPU figures from the parts; usage against the counters `before`."""
    load1 = _first_number(parts.get("loadavg", []))
    nproc = _first_number(parts.get("nproc", []))
    cgroup = _cgroup_cpu(parts)
    quota = _valid_cpus(cgroup[0]) if cgroup is not None else None
    cpus = quota if quota is not None else _valid_cpus(nproc)
    times: CpuTimes | None = None
    if cgroup is not None:
        usage_seconds = cgroup[1]
        uptime = _first_number(parts.get("uptime", []))
        if usage_seconds is not None and uptime is not None and cpus is not None:
            times = CpuTimes(busy=usage_seconds, total=uptime * cpus, cgroup=True, cpus=cpus)
    if times is None:
        times = _proc_times(parts.get("stat", []))
    if load1 is None and cpus is None and times is None:
        return None
    return Cpu(
        usage=cpu_usage(before, times),
        load1=load1,
        cpus=cpus,
        container=cgroup is not None,
        times=times,
    )


def _strip_control(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable())


def parse_gpu_line(line: str) -> Gpu | None:
    """One `nvidia-smi` CSV line; None for a line that is not one (`No devices were found`)."""
    fields = [field.strip() for field in line.split(",")]
    if len(fields) < 8:
        return None
    index = _integer(fields[0])
    if index is None or index < 0:
        return None
    figures = [_number(field) for field in fields[-6:]]
    utilization, mem_used, mem_total, temperature, power, power_limit = figures
    return Gpu(
        index=index,
        name=_strip_control(",".join(fields[1:-6])),
        utilization=None if utilization is None else min(max(utilization / 100, 0.0), 1.0),
        memory_used_bytes=None if mem_used is None else round(mem_used * _MIB),
        memory_total_bytes=None if mem_total is None else round(mem_total * _MIB),
        temperature_celsius=temperature,
        power_watts=power,
        power_limit_watts=power_limit,
    )
