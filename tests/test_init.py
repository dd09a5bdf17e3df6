"""`overbrainer init` and `overbrainer config check` through the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train_helpers import axolotl_on_path

VAULT = r"""
import http.server, json, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/v1/secret/data/overbrainer" and self.headers["X-Vault-Token"] == "tok"
        body = json.dumps({"data": {"data": {"openrouter_api_key": "sk-vault-SECRET"}}}).encode()
        self.send_response(200 if ok else 403)
        self.send_header("Content-Length", str(len(body) if ok else 0))
        self.end_headers()
        if ok:
            self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.fixture(autouse=True)
def axolotl(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Axolotl on PATH: the projects `init` writes train on this machine."""
    axolotl_on_path(monkeypatch, tmp_path_factory.mktemp("axolotl-bin"))


def overbrainer(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OVERBRAINER_", "VAULT_"))}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "overbrainer", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_init_writes_a_project_that_config_check_accepts(tmp_path: Path) -> None:
    result = overbrainer("init", "demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    demo = tmp_path / "demo"
    names = sorted(str(p.relative_to(demo)) for p in demo.rglob("*") if p.is_file())
    assert names == [
        ".env.example",
        ".gitignore",
        ".overbrainer/version",
        "overbrainer.toml",
        "prompts/answer_system.txt",
        "prompts/judge.txt",
        "prompts/quality.txt",
        "prompts/questions.txt",
        "prompts/subtopics.txt",
    ]
    assert (demo / ".overbrainer/version").read_text() == "1\n"
    assert (demo / ".gitignore").read_text() == ".env\n/data/\n/runs/\n/.overbrainer/\n"
    assert f"INFO created {Path('demo') / 'overbrainer.toml'}" in result.stderr
    assert result.stdout == (
        "next: copy .env.example to .env and put the provider's key in it, "
        "then `cd demo && overbrainer config check` and `overbrainer run`\n"
    )

    # The hint's steps, one by one: each failure says what is missing, in one line.
    unset = overbrainer("config", "check", cwd=demo)
    assert unset.returncode == 2
    assert unset.stderr == (
        "error: providers.openrouter.base_url is not set "
        "(set OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL); roles.generator and roles.parent "
        "use it\n"
    )
    (demo / ".env").write_text((demo / ".env.example").read_text())
    # No key is a warning, not a refusal: a self-hosted server on another machine needs none.
    empty = overbrainer("config", "check", cwd=demo)
    assert empty.returncode == 0, empty.stderr
    assert empty.stderr.endswith(
        " WARN providers.openrouter.api_key is empty "
        "(set OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY if openrouter.ai needs one): its "
        "requests go without an auth header; roles.generator and roles.parent use it\n"
    )
    # Shown as what it is, never as `***` (which reads as a key that is set).
    assert "providers.openrouter.api_key = (empty)  (env)" in empty.stdout.splitlines()
    resolved = overbrainer("config", "check", "--resolve", cwd=demo)
    assert "api_key: resolved" not in resolved.stdout
    assert "config check` warns" in (demo / ".env.example").read_text()
    (demo / ".env").write_text(
        (demo / ".env.example")
        .read_text()
        .replace("OPENROUTER__API_KEY=\n", "OPENROUTER__API_KEY=sk-or-SECRET\n")
    )
    without = overbrainer("config", "check", cwd=demo, env={"PATH": "/usr/bin:/bin"})
    assert without.returncode == 2
    assert without.stderr == (
        "error: target `local` cannot train: axolotl is not on PATH (set targets.local.venv to "
        "Axolotl's virtual environment); `config check --no-train` checks a dataset-only run "
        "(`run --no-train`)\n"
    )
    assert "targets.local = local, native, no axolotl on PATH" in without.stdout.splitlines()
    filled = overbrainer("config", "check", cwd=demo)
    assert filled.returncode == 0, filled.stderr
    axolotl = Path(os.environ["PATH"].split(os.pathsep)[0]) / "axolotl"
    assert f"targets.local = local, native, axolotl at {axolotl}" in filled.stdout.splitlines()
    assert "SECRET" not in filled.stdout + filled.stderr

    lines = filled.stdout.splitlines()
    assert lines[0] == "project.name = my_project"
    assert "topics.ownership = 10 subtopics x 30 questions" in lines
    assert "providers.openrouter.api_key = ***  (env)" in lines
    assert "providers.openrouter.protocol = openai" in lines
    dialect = lines.index("providers.openrouter.dialect = openrouter (detected from the base URL)")
    assert lines[dialect - 1] == "providers.openrouter.protocol = openai"
    assert "training = Qwen/Qwen3-4B on local (qlora)" in lines
    # The reference's fields in words; our own keys get lines of their own only when set.
    assert (
        "pipeline: concurrency 8, max_retries 5, dedup_threshold 0.8, eval_ratio 0.1, seed 42, "
        "include_system_prompt false, embedding_threshold 0.9, question_batch_size 10, "
        "request_timeout_secs 600"
    ) in lines
    assert not [line for line in lines if "(os error" in line or "Pipeline {" in line]
    assert not [line for line in lines if "max_cost_usd" in line or "drain_secs" in line]
    env = {"OVERBRAINER_PIPELINE__MAX_COST_USD": "2.5", "OVERBRAINER_PIPELINE__DRAIN_SECS": "5"}
    own = overbrainer("config", "check", cwd=demo, env=env).stdout.splitlines()
    assert own[own.index("pipeline.max_cost_usd = 2.5  (env)") + 1] == (
        "pipeline.drain_secs = 5.0  (env)"
    )


def test_init_refuses_an_existing_project_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "judge.txt").write_text("mine")
    result = overbrainer("-C", str(tmp_path), "init", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {tmp_path / 'prompts' / 'judge.txt'} already exists"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["judge.txt", "prompts"]


def test_init_adds_only_missing_gitignore_entries(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("target\n/data/")
    assert overbrainer("init", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".gitignore").read_text() == "target\n/data/\n.env\n/runs/\n/.overbrainer/\n"


def test_config_check_marks_env_values_and_masks_secrets(tmp_path: Path) -> None:
    assert overbrainer("init", cwd=tmp_path).returncode == 0
    (tmp_path / ".env").write_text(
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=http://127.0.0.1:1/v1\n"
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=sk-literal-SECRET\n"
    )
    result = overbrainer(
        "config", "check", cwd=tmp_path, env={"OVERBRAINER_PIPELINE__CONCURRENCY": "16"}
    )
    assert result.returncode == 0, result.stderr
    assert "providers.openrouter.api_key = ***  (env)" in result.stdout.splitlines()
    assert "pipeline: concurrency 16, max_retries 5" in result.stdout
    assert result.stdout.splitlines()[8].endswith("request_timeout_secs 600  (env)")
    # A loopback base URL says nothing of what serves it: the protocol's generic dialect.
    assert (
        "providers.openrouter.dialect = openai-compatible (the openai protocol's default)"
        in result.stdout.splitlines()
    )
    assert "SECRET" not in result.stdout + result.stderr


def test_config_check_reports_problems_with_exit_2(tmp_path: Path) -> None:
    assert overbrainer("init", cwd=tmp_path).returncode == 0
    result = overbrainer(
        "config",
        "check",
        cwd=tmp_path,
        env={"OVERBRAINER_PIPELINE__CONCURRENCY": "0", "OVERBRAINER_PIPELINE__EVAL_RATIO": "1"},
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: invalid configuration:\n")
    assert "pipeline.concurrency" in result.stderr
    assert "pipeline.eval_ratio" in result.stderr


def test_config_check_resolve_reads_vault_and_never_prints_the_secret(tmp_path: Path) -> None:
    assert overbrainer("init", cwd=tmp_path).returncode == 0
    (tmp_path / ".env").write_text(
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=https://openrouter.example/api/v1\n"
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=vault:secret/overbrainer#openrouter_api_key\n"
    )
    vault = subprocess.Popen([sys.executable, "-c", VAULT], stdout=subprocess.PIPE, text=True)
    try:
        assert vault.stdout is not None
        port = int(vault.stdout.readline())
        env = {"VAULT_ADDR": f"http://127.0.0.1:{port}", "VAULT_TOKEN": "tok"}
        ok = overbrainer("config", "check", "--resolve", cwd=tmp_path, env=env)
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.splitlines()[-1] == "providers.openrouter.api_key: resolved"
        assert "SECRET" not in ok.stdout + ok.stderr
        bad = overbrainer(
            "config", "check", "--resolve", cwd=tmp_path, env={**env, "VAULT_TOKEN": "wrong"}
        )
        assert bad.returncode != 0
        assert "cannot resolve providers.openrouter.api_key" in bad.stderr
        assert "SECRET" not in bad.stdout + bad.stderr
    finally:
        vault.kill()
        vault.wait()


def test_init_that_fails_midway_takes_back_what_it_wrote(tmp_path: Path) -> None:
    (tmp_path / ".overbrainer" / "version").mkdir(parents=True)
    result = overbrainer("init", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: cannot write the project in {Path('.')}")
    assert not (tmp_path / "overbrainer.toml").exists()
    assert not (tmp_path / "prompts" / "judge.txt").exists()
    (tmp_path / ".overbrainer" / "version").rmdir()
    assert overbrainer("init", cwd=tmp_path).returncode == 0


def test_config_check_without_vault_addr_is_a_config_error_even_without_resolve(
    tmp_path: Path,
) -> None:
    assert overbrainer("init", cwd=tmp_path).returncode == 0
    env = {
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL": "https://openrouter.example/api/v1",
        "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY": "vault:secret/overbrainer#key",
    }
    for args in (("config", "check"), ("config", "check", "--resolve")):
        result = overbrainer(*args, cwd=tmp_path, env=env)
        assert result.returncode == 2
        assert result.stderr == (
            "error: cannot resolve providers.openrouter.api_key: "
            "a vault: reference was found but VAULT_ADDR is not set\n"
        )
