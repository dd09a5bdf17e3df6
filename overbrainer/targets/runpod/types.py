"""What the client reads from the API: pods, GPU types, data centers, volumes, templates."""

from __future__ import annotations

import enum
import math
import re

import attrs

from overbrainer.targets.runpod.sanitize import sanitize

RUN_MARKER = "OVERBRAINER_RUN_ID"
"""The pod env variable naming the run that made the pod."""
_POD_ID = re.compile(r"[A-Za-z0-9]+")


class ShapeError(ValueError):
    """An answer of the API that does not have the expected shape."""


class RemoteStatus(enum.Enum):
    """A pod's status as Runpod reports it; anything unknown is `UNKNOWN`."""

    PROVISIONING = "PROVISIONING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    EXITED = "EXITED"
    ERROR = "ERROR"
    TERMINATED = "TERMINATED"
    UNKNOWN = "UNKNOWN"

    @property
    def dead(self) -> bool:
        """Whether the pod runs no more (exited, failed or terminated)."""
        return self in (RemoteStatus.EXITED, RemoteStatus.ERROR, RemoteStatus.TERMINATED)


class Availability(enum.Enum):
    """A stock band of the catalog."""

    NONE = "NONE"
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"
    UNKNOWN = "UNKNOWN"

    @property
    def in_stock(self) -> bool:
        """LOW, MEDIUM and HIGH are in stock."""
        return self in (Availability.LOW, Availability.MEDIUM, Availability.HIGH)


@attrs.frozen
class SshEndpoint:
    """Where the pod's own sshd answers (`ssh.direct`)."""

    host: str
    port: int
    user: str


@attrs.frozen
class Pod:
    """The fields of a pod the client uses."""

    id: str
    name: str
    status: RemoteStatus
    cost: float
    data_center_id: str | None
    gpu_id: str | None
    gpu_count: int
    ssh: SshEndpoint | None
    run_id: str | None
    created_at: str | None


@attrs.frozen
class DataCenterStock:
    """A GPU type's stock in one data center."""

    id: str
    name: str
    availability: Availability


@attrs.frozen
class GpuType:
    """A GPU type of the catalog; prices and counts are per GPU, for Secure Cloud."""

    id: str
    name: str
    manufacturer: str
    memory_gb: int
    secure: bool
    secure_price: float | None
    max_count_secure: int
    availability: Availability
    data_centers: tuple[DataCenterStock, ...]
    cuda_versions: tuple[str, ...] = ()

    def stock_in(self, data_center: str) -> Availability:
        """The band in `data_center` (NONE when it is not listed there)."""
        for place in self.data_centers:
            if place.id == data_center:
                return place.availability
        return Availability.NONE


@attrs.frozen
class DataCenter:
    """A data center and the GPU types in stock there."""

    id: str
    name: str
    region: str
    gpus_in_stock: tuple[str, ...]


@attrs.frozen
class NetworkVolume:
    """A network volume of the account."""

    id: str
    name: str
    size_gb: int
    data_center: str


@attrs.frozen
class Template:
    """A pod template of the account."""

    id: str
    name: str
    image: str
    serverless: bool


def _dict(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ShapeError(f"{what} is not an object")
    return value


def _str(body: dict[str, object], key: str, what: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise ShapeError(f"{what} has no string `{key}`")
    return sanitize(value)


def _opt_str(body: dict[str, object], key: str) -> str | None:
    value = body.get(key)
    return sanitize(value) if isinstance(value, str) else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _band(value: object) -> Availability:
    try:
        return Availability(value)
    except ValueError:
        return Availability.UNKNOWN


def parse_pod(value: object) -> Pod:
    """A pod from its JSON; its ID must be alphanumeric."""
    body = _dict(value, "a pod")
    pod_id = body.get("id")
    if not isinstance(pod_id, str) or not _POD_ID.fullmatch(pod_id):
        raise ShapeError("a pod has no alphanumeric `id`")
    try:
        status = RemoteStatus(body.get("status"))
    except ValueError:
        status = RemoteStatus.UNKNOWN
    gpu = body.get("gpu") if isinstance(body.get("gpu"), dict) else {}
    assert isinstance(gpu, dict)
    env = body.get("env") if isinstance(body.get("env"), dict) else {}
    assert isinstance(env, dict)
    marker = env.get(RUN_MARKER)
    return Pod(
        id=pod_id,
        name=_opt_str(body, "name") or "",
        status=status,
        cost=_number(body.get("cost")) or 0.0,
        data_center_id=_opt_str(body, "dataCenterId"),
        gpu_id=_opt_str(gpu, "id"),
        gpu_count=_int(gpu.get("count"), 0),
        ssh=_endpoint(body.get("ssh")),
        run_id=sanitize(marker) if isinstance(marker, str) else None,
        created_at=_opt_str(body, "createdAt"),
    )


def _endpoint(value: object) -> SshEndpoint | None:
    if not isinstance(value, dict) or not isinstance(value.get("direct"), dict):
        return None
    direct = value["direct"]
    host, port, user = direct.get("host"), direct.get("port"), direct.get("username")
    if not isinstance(host, str) or not isinstance(user, str) or _int(port) <= 0:
        return None
    return SshEndpoint(sanitize(host), _int(port), sanitize(user))


def parse_gpu_type(value: object) -> GpuType:
    """A GPU type from the catalog; a secure price counts only if finite and above 0."""
    body = _dict(value, "a GPU type")
    price = body.get("price") if isinstance(body.get("price"), dict) else {}
    counts = body.get("maxCount") if isinstance(body.get("maxCount"), dict) else {}
    assert isinstance(price, dict) and isinstance(counts, dict)
    secure_price = _number(price.get("secure"))
    places = body.get("dataCenters") if isinstance(body.get("dataCenters"), list) else []
    assert isinstance(places, list)
    cuda = body.get("cudaVersions") if isinstance(body.get("cudaVersions"), list) else []
    assert isinstance(cuda, list)
    return GpuType(
        id=_str(body, "id", "a GPU type"),
        name=_opt_str(body, "name") or "",
        manufacturer=_opt_str(body, "manufacturer") or "",
        memory_gb=_int(body.get("memory")),
        secure=body.get("secure") is True,
        secure_price=secure_price if secure_price is not None and secure_price > 0 else None,
        max_count_secure=_int(counts.get("secure")),
        availability=_band(body.get("availability")),
        data_centers=tuple(
            DataCenterStock(
                _str(place, "id", "a data center"),
                _opt_str(place, "name") or "",
                _band(place.get("availability")),
            )
            for place in (_dict(p, "a data center") for p in places)
        ),
        cuda_versions=tuple(
            sanitize(str(v.get("version") if isinstance(v, dict) else v)) for v in cuda
        ),
    )


def parse_data_center(value: object) -> DataCenter:
    """A data center with the GPU types in stock there."""
    body = _dict(value, "a data center")
    gpus = body.get("gpuAvailability") if isinstance(body.get("gpuAvailability"), list) else []
    assert isinstance(gpus, list)
    in_stock = tuple(
        _str(gpu, "id", "a GPU availability")
        for gpu in (_dict(g, "a GPU availability") for g in gpus)
        if _band(gpu.get("availability")).in_stock
    )
    return DataCenter(
        id=_str(body, "id", "a data center"),
        name=_opt_str(body, "name") or "",
        region=_opt_str(body, "region") or "",
        gpus_in_stock=in_stock,
    )


def parse_volume(value: object) -> NetworkVolume:
    """A network volume."""
    body = _dict(value, "a network volume")
    return NetworkVolume(
        id=_str(body, "id", "a network volume"),
        name=_opt_str(body, "name") or "",
        size_gb=_int(body.get("size")),
        data_center=_opt_str(body, "dataCenter") or "",
    )


def parse_template(value: object) -> Template:
    """A template (serverless ones are dropped by the caller)."""
    body = _dict(value, "a template")
    return Template(
        id=_str(body, "id", "a template"),
        name=_opt_str(body, "name") or "",
        image=_opt_str(body, "image") or "",
        serverless=body.get("serverless") is True,
    )
