"""The pod's bootstrap and watchdog scripts under `dash`, against the loopback Runpod fake.

Short intervals stand in for the real ones; each test waits for what the script did (its
verdict file, the fake's request log, `snapshot.request`), bounded by `trio.fail_after`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO

import pytest
import trio

from overbrainer.targets.runpod.keys import announced_host_key, make_keys
from overbrainer.targets.runpod.scripts import bootstrap_script, script_text
from overbrainer.targets.runpod.types import RUN_MARKER
from tests.real_parts import needs
from tests.runpod_fake import KEY, Fault, RunpodFake, open_fake, pod_json

pytestmark = needs(shutil.which("dash") is None, "dash is not installed")

POD = "pod0001"
RUN = "p_20261001-120000"


def add_pod(fake: RunpodFake) -> None:
    fake.pods[POD] = pod_json(
        POD, f"overbrainer-{RUN}-1", "NVIDIA A40", {RUN_MARKER: RUN}, "RUNNING"
    )


def base_env(fake: RunpodFake, run_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "RUNPOD_API_KEY": KEY,
        "RUNPOD_POD_ID": POD,
        "OVERBRAINER_RUN_DIR": str(run_dir),
        "OVERBRAINER_API_URL": fake.url,
        "OVERBRAINER_VERSION": "test",
        "INTERVAL": "0.1",
        "PROBE_WAIT": "0.1",
        "OVERBRAINER_BOOT_GRACE": "3600",
        "OVERBRAINER_RETRIEVE_GRACE": "3600",
    }
    env.update(extra)
    return env


def deletes(fake: RunpodFake) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.requests if r.method in ("DELETE", "POST")]


async def run_until(
    command: list[str],
    env: dict[str, str],
    done: Callable[[], bool],
    limit: float = 60,
    stdout: Path | None = None,
) -> int | None:
    """Run `command` until `done()` or its end; its exit status (None when it was stopped).
    Its stdout goes to the file `stdout` when given."""
    with open(stdout or os.devnull, "wb") as out:  # noqa: ASYNC230 - a test's file
        return await _run_until(command, env, done, limit, out)


async def _run_until(
    command: list[str], env: dict[str, str], done: Callable[[], bool], limit: float, out: IO[bytes]
) -> int | None:
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            partial(
                trio.run_process,
                command,
                env=env,
                check=False,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.DEVNULL,
            )
        )
        with trio.fail_after(limit):
            # Polling: the signals are a child's exit and files it writes.
            while process.returncode is None and not done():  # noqa: ASYNC110
                await trio.sleep(0.05)
        code: int | None = process.returncode
        if code is None:
            process.kill()
        return code


def watchdog(tmp_path: Path) -> list[str]:
    path = tmp_path / "watchdog.sh"
    path.write_text(script_text("watchdog.sh"), "utf-8")
    return ["dash", str(path)]


def text(path: Path) -> str:
    return path.read_text("utf-8") if path.exists() else ""


def checks(run_dir: Path) -> int:
    value = text(run_dir / ".pod" / "checks").strip()
    return int(value) if value else 0


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    path = tmp_path / "overbrainer" / RUN
    path.mkdir(parents=True)
    return path


@pytest.fixture
def live_job(run_dir: Path):  # type: ignore[no-untyped-def]
    """A started job: `job.pid` names a live process group."""
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    (run_dir / "job.pid").write_text(f"{process.pid}\n")
    yield process
    process.kill()
    process.wait()


async def test_verdict_ready_then_no_delete_while_nothing_is_due(
    tmp_path: Path, run_dir: Path
) -> None:
    async with open_fake() as fake:
        add_pod(fake)
        env = base_env(fake, run_dir)
        await run_until(watchdog(tmp_path), env, lambda: checks(run_dir) >= 3)
    assert text(run_dir / ".pod" / "watchdog") == "ready\n"
    assert deletes(fake) == []
    probe = fake.asked("GET", f"pods/{POD}")[0]
    assert probe.headers["user-agent"] == "overbrainer-watchdog/test"
    assert fake.violations == []


@pytest.mark.parametrize(
    ("change", "verdict"),
    [
        ({"RUNPOD_API_KEY": ""}, "failed missing_key"),
        ({"RUNPOD_API_KEY": "rpa_WRONG"}, "failed http_401"),
        (
            {"OVERBRAINER_API_URL": "http://127.0.0.1:9/v2", "PROBE_TRIES": "2"},
            "failed unreachable",
        ),
    ],
)
async def test_failed_verdicts_end_the_watchdog(
    tmp_path: Path, run_dir: Path, change: dict[str, str], verdict: str
) -> None:
    async with open_fake() as fake:
        add_pod(fake)
        code = await run_until(watchdog(tmp_path), base_env(fake, run_dir, **change), lambda: False)
    assert code == 1
    assert text(run_dir / ".pod" / "watchdog") == verdict + "\n"
    assert deletes(fake) == []


async def test_probe_retries_a_server_error(tmp_path: Path, run_dir: Path) -> None:
    async with open_fake() as fake:
        add_pod(fake)
        fake.fail(Fault("GET", f"pods/{POD}", status=503), Fault("GET", f"pods/{POD}", status=429))
        env = base_env(fake, run_dir)
        await run_until(watchdog(tmp_path), env, lambda: checks(run_dir) >= 1)
    assert text(run_dir / ".pod" / "watchdog") == "ready\n"
    assert len(fake.asked("GET", f"pods/{POD}")) == 3


def deleted_for(run_dir: Path, reason: str) -> bool:
    return f"pod {POD} deleted ({reason})" in text(run_dir / ".pod" / "watchdog.log")


async def delete_rule(
    tmp_path: Path, run_dir: Path, reason: str, **extra: str
) -> tuple[int | None, RunpodFake]:
    async with open_fake() as fake:
        add_pod(fake)
        env = base_env(fake, run_dir, **extra)
        code = await run_until(watchdog(tmp_path), env, lambda: False)
    assert code == 0, text(run_dir / ".pod" / "watchdog.log")
    assert deleted_for(run_dir, reason)
    assert deletes(fake) == [f"DELETE /v2/pods/{POD}"]
    assert fake.pods == {}
    assert fake.violations == []
    return code, fake


async def test_never_started(tmp_path: Path, run_dir: Path) -> None:
    await delete_rule(tmp_path, run_dir, "never_started", OVERBRAINER_BOOT_GRACE="1")


async def test_retrieved(tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]) -> None:
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "retrieved").write_text("")
    (run_dir / "exit_code").write_text("0\n")
    await delete_rule(tmp_path, run_dir, "retrieved")


async def test_abandoned_after_retrieve_grace(tmp_path: Path, run_dir: Path) -> None:
    (run_dir / "job.pid").write_text("999999\n")  # a group that is gone: the job ended
    await delete_rule(tmp_path, run_dir, "abandoned", OVERBRAINER_RETRIEVE_GRACE="1")
    assert "the job ended" in text(run_dir / ".pod" / "watchdog.log")


async def test_cost_cap(tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]) -> None:
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "cost_cap_at").write_text(f"{int(time.time())}\n")
    await delete_rule(tmp_path, run_dir, "cost_cap")


async def test_deadline_asks_a_snapshot_first_then_deletes(
    tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]
) -> None:
    past = str(int(time.time()) - 5)
    await delete_rule(tmp_path, run_dir, "deadline", OVERBRAINER_DEADLINE=past, SNAPSHOT_WAIT="1")
    assert text(run_dir / "snapshot.request") == "deadline\n"
    log = text(run_dir / ".pod" / "watchdog.log")
    assert log.index("snapshot requested (deadline)") < log.index("deleting pod")


async def test_bootstrap_failed_is_deleted_at_once(tmp_path: Path, run_dir: Path) -> None:
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "bootstrap_failed").write_text("sshd did not restart\n")
    await delete_rule(tmp_path, run_dir, "bootstrap_failed", OVERBRAINER_BOOT_FAILED="1")
    assert text(run_dir / ".pod" / "watchdog") == "failed bootstrap: sshd did not restart\n"


async def test_fresh_lease_holds_off_the_deadline(
    tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]
) -> None:
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "lease").write_text("")
    async with open_fake() as fake:
        add_pod(fake)
        env = base_env(fake, run_dir, OVERBRAINER_DEADLINE=str(int(time.time()) - 5))
        await run_until(watchdog(tmp_path), env, lambda: checks(run_dir) >= 5)
    assert deletes(fake) == []
    assert not (run_dir / "snapshot.request").exists()


async def test_kept_pod_with_a_started_job_is_never_deleted(
    tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]
) -> None:
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "retrieved").write_text("")
    (run_dir / ".pod" / "cost_cap_at").write_text("0\n")
    (run_dir / ".pod" / "snapshot_at").write_text("0\n")
    async with open_fake() as fake:
        add_pod(fake)
        env = base_env(fake, run_dir, OVERBRAINER_KEEP_POD="1")
        await run_until(watchdog(tmp_path), env, lambda: checks(run_dir) >= 5)
    assert deletes(fake) == []
    assert not (run_dir / "snapshot.request").exists()


async def test_cost_snapshot_request(
    tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]
) -> None:
    (run_dir / ".pod").mkdir()
    (run_dir / ".pod" / "snapshot_at").write_text(f"{int(time.time())}\n")
    async with open_fake() as fake:
        add_pod(fake)
        env = base_env(fake, run_dir)
        await run_until(watchdog(tmp_path), env, lambda: checks(run_dir) >= 3)
    assert text(run_dir / "snapshot.request") == "cost\n"
    assert deletes(fake) == []


async def test_disk_snapshot_request_keeps_an_existing_request(
    tmp_path: Path, run_dir: Path, live_job: subprocess.Popen[bytes]
) -> None:
    async with open_fake() as fake:
        add_pod(fake)
        env = base_env(fake, run_dir, DISK_ACT="0")
        await run_until(watchdog(tmp_path), env, lambda: checks(run_dir) >= 2)
        assert text(run_dir / "snapshot.request") == "disk\n"
        (run_dir / "snapshot.request").write_text("requested\n")
        before = checks(run_dir)
        await run_until(
            watchdog(tmp_path), env, lambda: checks(run_dir) >= 3 and checks(run_dir) != before
        )
    assert text(run_dir / "snapshot.request") == "requested\n"


async def test_a_failed_delete_falls_back_then_is_retried(tmp_path: Path, run_dir: Path) -> None:
    async with open_fake() as fake:
        add_pod(fake)
        fake.fail(
            Fault("DELETE", f"pods/{POD}", status=500),
            Fault("POST", f"pods/{POD}/action", status=500),
            Fault("POST", f"pods/{POD}/action", status=500),
        )
        env = base_env(fake, run_dir, OVERBRAINER_BOOT_GRACE="0")
        code = await run_until(watchdog(tmp_path), env, lambda: False)
    assert code == 0
    assert deletes(fake) == [
        f"DELETE /v2/pods/{POD}",
        f"POST /v2/pods/{POD}/action",
        f"POST /v2/pods/{POD}/action",
        f"DELETE /v2/pods/{POD}",
    ]
    actions = [r.body for r in fake.asked("POST", f"pods/{POD}/action")]
    assert actions == [b'{"action":"terminate"}', b'{"action":"stop"}']
    log = text(run_dir / ".pod" / "watchdog.log")
    assert "trying again at the next check" in log
    assert fake.pods == {}
    assert fake.violations == []


async def test_stop_is_the_last_resort_and_says_the_volume_keeps_billing(
    tmp_path: Path, run_dir: Path
) -> None:
    async with open_fake() as fake:
        add_pod(fake)
        fake.fail(
            Fault("DELETE", f"pods/{POD}", status=500),
            Fault("POST", f"pods/{POD}/action", status=500),
        )
        env = base_env(fake, run_dir, OVERBRAINER_BOOT_GRACE="0")
        code = await run_until(watchdog(tmp_path), env, lambda: False)
    assert code == 0
    assert fake.pods[POD]["status"] == "EXITED"
    assert "its volume keeps billing" in text(run_dir / ".pod" / "watchdog.log")
    assert fake.violations == []


# The bootstrap, with its system paths moved under the test's directory.


async def bootstrap_env(
    fake: RunpodFake, tmp_path: Path, run_dir: Path, **extra: str
) -> dict[str, str]:
    keys = await make_keys(tmp_path / "local", RUN)
    env = base_env(fake, run_dir, **extra)
    env.update(
        OVERBRAINER_RUN_ID=RUN,
        OVERBRAINER_WORKDIR=str(run_dir.parent),
        OVERBRAINER_CLAIM=keys.client_public,
        OVERBRAINER_AUTHORIZED_KEY=keys.client_public,
        OVERBRAINER_ETC_DIR=str(tmp_path / "etc" / "overbrainer"),
        OVERBRAINER_SSH_ETC_DIR=str(tmp_path / "etc" / "ssh"),
        OVERBRAINER_ROOT_HOME=str(tmp_path / "root"),
        OVERBRAINER_SSHD_RESTART="true",
    )
    env.update(extra)
    return env


async def test_bootstrap_makes_and_announces_its_host_key_installs_the_rest_then_watches(
    tmp_path: Path, run_dir: Path
) -> None:
    ssh_etc = tmp_path / "etc" / "ssh"
    ssh_etc.mkdir(parents=True)
    (ssh_etc / "ssh_host_rsa_key").write_text("the image's own key\n")
    console = tmp_path / "console.log"
    async with open_fake() as fake:
        add_pod(fake)
        env = await bootstrap_env(fake, tmp_path, run_dir)
        await run_until(
            ["dash", "-c", bootstrap_script()], env, lambda: checks(run_dir) >= 1, stdout=console
        )
    assert text(run_dir / ".pod" / "watchdog") == "ready\n"
    assert text(run_dir / ".claim") == env["OVERBRAINER_CLAIM"] + "\n"
    # A new host key of the pod's own replaced the image's; its public half is on stdout.
    assert sorted(p.name for p in ssh_etc.iterdir()) == [
        "ssh_host_ed25519_key",
        "ssh_host_ed25519_key.pub",
    ]
    assert (ssh_etc / "ssh_host_ed25519_key").stat().st_mode & 0o777 == 0o600
    public = " ".join(text(ssh_etc / "ssh_host_ed25519_key.pub").split()[:2])
    announced = [
        key for key in map(announced_host_key, text(console).splitlines()) if key is not None
    ]
    assert announced == [public]
    assert f"overbrainer-host-key {public}\n" in text(console)
    assert "PRIVATE KEY" not in text(console) + text(run_dir / ".pod" / "bootstrap.log")
    authorized = tmp_path / "root" / ".ssh" / "authorized_keys"
    assert text(authorized) == env["OVERBRAINER_AUTHORIZED_KEY"] + "\n"
    job_env = text(tmp_path / "etc" / "overbrainer" / "job.env").splitlines()
    assert job_env[0].startswith("export PATH='")
    assert job_env[-1] == f"export HF_HOME='{run_dir.parent}/.hf-cache'"
    assert KEY not in "".join(job_env)
    assert text(tmp_path / "etc" / "overbrainer" / "watchdog.sh") == script_text("watchdog.sh")
    assert "starting the watchdog" in text(run_dir / ".pod" / "bootstrap.log")


async def test_bootstrap_that_cannot_make_a_host_key_fails_and_the_watchdog_deletes(
    tmp_path: Path, run_dir: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    console = tmp_path / "console.log"
    async with open_fake() as fake:
        add_pod(fake)
        ssh_etc = str(blocker / "ssh")
        env = await bootstrap_env(fake, tmp_path, run_dir, OVERBRAINER_SSH_ETC_DIR=ssh_etc)
        code = await run_until(
            ["dash", "-c", bootstrap_script()], env, lambda: False, stdout=console
        )
    assert code == 0
    verdict = f"failed bootstrap: cannot make the pod's SSH host key in {ssh_etc}\n"
    assert text(run_dir / ".pod" / "watchdog") == verdict
    assert deleted_for(run_dir, "bootstrap_failed")
    assert fake.pods == {}
    assert "overbrainer-host-key" not in text(console)


async def test_bootstrap_refuses_a_run_dir_claimed_by_another_run(
    tmp_path: Path, run_dir: Path
) -> None:
    (run_dir / ".claim").write_text("ssh-ed25519 AAAAother overbrainer-other\n")
    async with open_fake() as fake:
        add_pod(fake)
        env = await bootstrap_env(fake, tmp_path, run_dir)
        code = await run_until(["dash", "-c", bootstrap_script()], env, lambda: False)
    assert code == 0
    refused = tmp_path / "root" / "overbrainer-refused-run" / ".pod"
    assert text(refused / "watchdog") == (
        "failed bootstrap: the run directory belongs to another run\n"
    )
    assert text(run_dir / ".claim") == "ssh-ed25519 AAAAother overbrainer-other\n"
    assert fake.pods == {}
