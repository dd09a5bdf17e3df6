"""The pod create body, the run's keys and ssh config, and `pod.json` (reference §7.2-§7.4)."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
import trio

from overbrainer.config.settings import ListOrAuto
from overbrainer.targets import RunpodTarget
from overbrainer.targets.local_executor import LocalExecutor
from overbrainer.targets.runpod.api import open_runpod
from overbrainer.targets.runpod.create_body import (
    COMMAND_FIELD,
    PodRequest,
    command_value,
    create_body,
)
from overbrainer.targets.runpod.keys import (
    announced_host_key,
    forget_client_key,
    make_keys,
    ssh_config,
    write_known_hosts,
    write_ssh_config,
)
from overbrainer.targets.runpod.pod_end import copy_pod_logs
from overbrainer.targets.runpod.pod_record import (
    Attempt,
    AttemptResult,
    DeletedBy,
    PodRecord,
    PodRecordError,
    PodSsh,
    PodState,
    load_pod_record,
    save_pod_record,
    spend,
)
from overbrainer.targets.runpod.scripts import bootstrap_script
from overbrainer.targets.runpod.types import SshEndpoint
from tests.runpod_fake import KEY, open_fake

RUN = "p_20261001-120000"
TARGET = RunpodTarget(gpu_types=ListOrAuto(items=("NVIDIA A40",)), max_hours=4)


def request(**changes: object) -> PodRequest:
    values: dict[str, object] = {
        "run_id": RUN,
        "attempt": 1,
        "gpu_type": "NVIDIA A40",
        "data_center_ids": (),
        "deadline_unix": 1790000000,
        "api_url": "https://api.runpod.io/v2",
        "authorized_key": "ssh-ed25519 AAAAclient overbrainer-x",
        "bootstrap": "echo boot",
    }
    values.update(changes)
    return PodRequest(**values)  # type: ignore[arg-type]


def test_create_body_has_exactly_the_reference_fields() -> None:
    body = create_body(TARGET, request())
    assert list(body) == [
        "name", "image", "cloud", "gpu", "disk", "ports", "startSsh", "env", "args",
    ]  # fmt: skip
    assert body["name"] == f"overbrainer-{RUN}-1"
    assert body["gpu"] == {"id": "NVIDIA A40", "count": 1, "minCudaVersion": "13.0"}
    assert body["args"] == "bash -c 'echo boot'"
    assert COMMAND_FIELD == "args"
    assert body["env"] == {
        "OVERBRAINER_RUN_ID": RUN,
        "OVERBRAINER_WORKDIR": "/workspace/overbrainer",
        "OVERBRAINER_RUN_DIR": f"/workspace/overbrainer/{RUN}",
        "OVERBRAINER_DEADLINE": "1790000000",
        "OVERBRAINER_BOOT_GRACE": "1800",
        "OVERBRAINER_RETRIEVE_GRACE": "3600",
        "OVERBRAINER_KEEP_POD": "0",
        "OVERBRAINER_API_URL": "https://api.runpod.io/v2",
        "OVERBRAINER_AUTHORIZED_KEY": "ssh-ed25519 AAAAclient overbrainer-x",
        "OVERBRAINER_CLAIM": "ssh-ed25519 AAAAclient overbrainer-x",
        "OVERBRAINER_VERSION": body["env"]["OVERBRAINER_VERSION"],  # type: ignore[index]
        "JUPYTER_DISABLE": "1",
    }


# Every character a shell treats specially, and a line of the real bootstrap's kind.
AWKWARD = (
    "printf '%s\\n' \"$HOME\" `id -u` $(date) 'it'\"'\"'s' \\ \\\\ \\n\n"
    "line two; a && b || c | d > e < f * ? [x] ~ # { } ( ) ! % ^ = \t tab\n"
    "cat <<'END'\n$NOT_EXPANDED \\ 'q' \"dq\"\nEND\n\u00e9t\u00e9 \U0001f600\n"
)


@pytest.mark.parametrize("script", [AWKWARD, bootstrap_script(), "", "'", '"', "\\", "$"])
def test_the_args_string_splits_back_into_bash_c_script(script: str) -> None:
    value = command_value(script)
    assert isinstance(value, str)
    assert shlex.split(value) == ["bash", "-c", script]


def test_sh_c_of_the_args_string_gives_bash_the_script_byte_for_byte(tmp_path: Path) -> None:
    # What the pod does with the field: a shell splits it into words and runs them. bash
    # prints the -c string it was given, then stops before the awkward lines (which, run,
    # would leave files in its directory).
    script = 'printf %s "$BASH_EXECUTION_STRING"; exit 0\n' + AWKWARD
    done = subprocess.run(
        ["sh", "-c", command_value(script)],
        cwd=tmp_path,
        capture_output=True,
        check=True,
        timeout=30,
    )
    assert done.stdout.decode("utf-8") == script
    assert not list(tmp_path.iterdir())


def test_create_body_with_volume_data_centers_and_kept() -> None:
    target = RunpodTarget(
        gpu_types=ListOrAuto(items=("NVIDIA A40",)),
        max_hours=4,
        gpu_count=2,
        network_volume_id="vol123",
        data_center_ids=ListOrAuto(items=("EU-RO-1",)),
    )
    body = create_body(target, request(data_center_ids=("EU-RO-1",), deadline_unix=None))
    assert body["dataCenterIds"] == ["EU-RO-1"]
    assert body["mounts"] == {"network": [{"volumeId": "vol123", "path": "/workspace/data"}]}
    env = body["env"]
    assert isinstance(env, dict)
    assert "OVERBRAINER_DEADLINE" not in env
    assert env["OVERBRAINER_KEEP_POD"] == "1"
    assert env["OVERBRAINER_VOLUME_DIR"] == "/workspace/data"
    assert env["OVERBRAINER_RUN_DIR"] == f"/workspace/data/overbrainer/{RUN}"


async def test_create_body_passes_the_fakes_openapi_check() -> None:
    with_volume = RunpodTarget(
        gpu_types=ListOrAuto(auto=True),
        max_hours=1,
        network_volume_id="vol1",
        data_center_ids=ListOrAuto(items=("US-KS-2",)),
    )
    sent = [
        (TARGET, request(bootstrap=bootstrap_script())),
        (with_volume, request(attempt=2, deadline_unix=None, data_center_ids=("US-KS-2",))),
    ]
    with trio.fail_after(30):
        async with open_fake() as fake, open_runpod(fake.url, KEY) as api:
            for target, req in sent:
                pod = await api.create_pod(create_body(target, req))
                assert pod.run_id == RUN
    assert fake.violations == []
    assert len(fake.pods) == 2
    first = json.loads(fake.asked("POST", "pods")[0].body)
    assert shlex.split(first["args"]) == ["bash", "-c", bootstrap_script()]


async def test_keys_make_only_the_client_key_in_a_700_ssh_dir(tmp_path: Path) -> None:
    stale = tmp_path / "ssh" / "known_hosts"
    stale.parent.mkdir()
    stale.write_text("overbrainer-old ssh-ed25519 AAAAold\n")
    with trio.fail_after(30):
        keys = await make_keys(tmp_path, RUN)
    folder = tmp_path / "ssh"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == ["id_ed25519", "id_ed25519.pub"]
    assert keys.client_public.startswith("ssh-ed25519 ")
    assert keys.client_public.endswith(f" overbrainer-{RUN}")
    assert keys.client_public == (folder / "id_ed25519.pub").read_text().strip()
    forget_client_key(tmp_path)
    assert not (folder / "id_ed25519").exists()


BLOB = "AAAAC3NzaC1lZDI1NTE5AAAAIG5Qm2x0n3Xb8s3cD0p8jvG9gkq8x+Vn0oN1fN0lX7kE"


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (f"overbrainer-host-key ssh-ed25519 {BLOB}", f"ssh-ed25519 {BLOB}"),
        (f"overbrainer-host-key ssh-ed25519 {BLOB}\r", f"ssh-ed25519 {BLOB}"),
        (f"2026-06-01T12:00:00Z overbrainer-host-key ssh-ed25519 {BLOB}", f"ssh-ed25519 {BLOB}"),
        (f"overbrainer-host-key ssh-rsa {BLOB}", None),
        (f"overbrainer-host-key ssh-ed25519 {BLOB[:-1]}", None),
        (f"overbrainer-host-key ssh-ed25519 {BLOB}x", None),
        (f"my-overbrainer-host-key ssh-ed25519 {BLOB}", None),
        (f"ssh-ed25519 {BLOB}", None),
        ("starting the container", None),
    ],
)
def test_the_announced_host_key_is_one_exact_line_shape(line: str, key: str | None) -> None:
    assert announced_host_key(line) == key


def test_known_hosts_trusts_the_announced_key_under_the_alias_only(tmp_path: Path) -> None:
    (tmp_path / "ssh").mkdir()
    write_known_hosts(tmp_path, RUN, f"ssh-ed25519 {BLOB}")
    assert (
        tmp_path / "ssh" / "known_hosts"
    ).read_text() == f"overbrainer-{RUN} ssh-ed25519 {BLOB}\n"


def test_ssh_config_text(tmp_path: Path) -> None:
    run_dir = tmp_path / "100%" / RUN
    (run_dir / "ssh").mkdir(parents=True)
    path = write_ssh_config(run_dir, RUN, SshEndpoint("203.0.113.7", 40022, "root"))
    ssh = f"{tmp_path}/100%%/{RUN}/ssh"
    assert path.read_text() == (
        f"Host overbrainer-{RUN}\n"
        "  HostName 203.0.113.7\n"
        "  Port 40022\n"
        "  User root\n"
        f'  IdentityFile "{ssh}/id_ed25519"\n'
        "  IdentitiesOnly yes\n"
        "  IdentityAgent none\n"
        f'  UserKnownHostsFile "{ssh}/known_hosts"\n'
        "  GlobalKnownHostsFile /dev/null\n"
        f"  HostKeyAlias overbrainer-{RUN}\n"
        "  CheckHostIP no\n"
        "  StrictHostKeyChecking yes\n"
        "  UpdateHostKeys no\n"
        "  PasswordAuthentication no\n"
        "  KbdInteractiveAuthentication no\n"
    )


@pytest.mark.parametrize(
    "endpoint",
    [
        SshEndpoint("host name", 22, "root"),
        SshEndpoint("h\nProxyCommand x", 22, "root"),
        SshEndpoint("1.2.3.4", 22, "ro ot"),
        SshEndpoint("1.2.3.4", 0, "root"),
    ],
)
def test_ssh_config_refuses_odd_endpoints(tmp_path: Path, endpoint: SshEndpoint) -> None:
    from overbrainer.targets.runpod.keys import KeysError

    with pytest.raises(KeysError):
        ssh_config(tmp_path, RUN, endpoint)


RECORD = PodRecord(
    run_id=RUN,
    state=PodState.DELETED,
    deadline="2026-10-01T16:00:00Z",
    deadline_unix=1790870400,
    attempts=(
        Attempt(
            "overbrainer-r-1",
            "NVIDIA A40",
            "2026-10-01T12:00:00Z",
            1790870400,
            AttemptResult.UNAVAILABLE,
            detail="no capacity for this GPU type",
        ),
        Attempt(
            "overbrainer-r-2",
            "NVIDIA H100 80GB HBM3",
            "2026-10-01T12:00:05Z",
            1790870405,
            AttemptResult.CREATED,
            pod_id="k3x9abc",
        ),
    ),
    pod_id="k3x9abc",
    gpu_type="NVIDIA H100 80GB HBM3",
    data_center_id="US-KS-2",
    cost_per_hour=2.69,
    created_at="2026-10-01T12:00:06Z",
    created_unix=1790856006,
    ready_at="2026-10-01T12:03:47Z",
    ssh=PodSsh("203.0.113.7", 40022, "root"),
    host_key="ssh-ed25519 AAAAhost",
    deleted_at="2026-10-01T13:12:06Z",
    deleted_by=DeletedBy.CLIENT,
    estimated_spend=3.228,
    max_cost_usd=20.0,
)


def test_pod_json_round_trip_and_field_order(tmp_path: Path) -> None:
    save_pod_record(tmp_path, RECORD)
    text = (tmp_path / "pod.json").read_text()
    assert text.endswith("}\n")
    assert list(json.loads(text)) == [
        "version", "run_id", "state", "keep", "deadline", "deadline_unix", "attempts", "pod_id",
        "gpu_type", "gpu_count", "data_center_id", "cost_per_hour", "created_at",
        "created_unix", "ready_at", "ssh", "host_key", "deleted_at", "deleted_by",
        "estimated_spend", "stray_pods", "max_cost_usd", "network_volume_id", "max_volume_gb",
    ]  # fmt: skip
    assert json.loads(text)["attempts"][0] == {
        "name": "overbrainer-r-1",
        "gpu_type": "NVIDIA A40",
        "sent_at": "2026-10-01T12:00:00Z",
        "deadline_unix": 1790870400,
        "result": "unavailable",
        "detail": "no capacity for this GPU type",
    }
    assert load_pod_record(tmp_path) == RECORD
    assert load_pod_record(tmp_path / "none") is None
    assert [p.name for p in tmp_path.iterdir()] == ["pod.json"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"version": 2}, "`version` is not 1 (written by another overbrainer?)"),
        ({"state": "sleeping"}, "`state` has an unknown value"),
        ({"keep": "no"}, "`keep` is not a boolean"),
        ({"cost_per_hour": "0.4"}, "`cost_per_hour` is not a number"),
        ({"cost_per_hour": float("nan")}, "`cost_per_hour` is not a finite number"),
        (
            {"ssh": {"host": "h", "port": "22", "user": "u"}},
            "`port` is not an unsigned 64-bit integer",
        ),
        ({"attempts": [{"name": "n"}]}, "missing field `deadline_unix` in attempt"),
        ({"stray_pods": [1]}, "`stray_pods` is not a string"),
        ({"host_key": None, "ready_at": 3}, "`ready_at` is not a string"),
    ],
)
def test_pod_json_strict_reader(tmp_path: Path, change: dict[str, object], why: str) -> None:
    body = {**RECORD.to_dict(), **change}
    (tmp_path / "pod.json").write_text(json.dumps(body))
    with pytest.raises(PodRecordError) as caught:
        load_pod_record(tmp_path)
    assert str(caught.value) == f"runs/{tmp_path.name}/pod.json is not a valid pod record: {why}"


def test_pod_json_not_json(tmp_path: Path) -> None:
    (tmp_path / "pod.json").write_text("{\n  oops")
    with pytest.raises(PodRecordError, match=r"is not a valid pod record \(line 2, column 3\)"):
        load_pod_record(tmp_path)


def test_spend_is_rounded_to_a_hundredth_of_a_cent() -> None:
    assert spend(0.44, 4320) == 0.528
    assert spend(2.69, 1) == 0.0007
    assert os.sep == "/"


async def test_the_pod_logs_are_kept_and_one_that_cannot_be_read_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    remote = tmp_path / "pod" / "run"
    (remote / ".pod").mkdir(parents=True)
    (remote / ".pod" / "bootstrap.log").write_text("starting the watchdog\n")
    (remote / ".pod" / "watchdog.log").mkdir()  # a read of it fails
    local = tmp_path / "runs" / "r1" / ".pod"
    local.parent.mkdir(parents=True)
    with trio.fail_after(10):
        await copy_pod_logs(LocalExecutor(tmp_path), str(remote), local)
    assert (local / "bootstrap.log").read_text() == "starting the watchdog\n"
    assert not (local / "watchdog.log").exists()
    assert caplog.messages == [
        "pod: cannot keep the pod's .pod/watchdog.log: "
        f"[Errno 21] Is a directory: '{remote / '.pod' / 'watchdog.log'}'"
    ]
