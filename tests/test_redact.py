"""The redactor: what it masks, what it leaves, and that every exit path goes through it."""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from overbrainer.config.load import load_settings
from overbrainer.config.secrets import Secret, resolve_secret, vault_token
from overbrainer.events.codec import JsonlObserver
from overbrainer.events.types import ItemFailed, Stage, StageStats
from overbrainer.model import redact
from overbrainer.model.errors import OverbrainerError
from overbrainer.storage.history import HistoryRecord, HistoryStatus, append_history
from overbrainer.ui.logs import LineFormatter, LogBuffer, LogMode, init_logging, reset_logging
from tests.pipeline_support import make_project

KEY = "sk-or-v1-0123456789abcdef"


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    redact.forget_all()
    yield
    redact.forget_all()


def test_nothing_registered_leaves_text_as_is() -> None:
    assert redact.redact(f"Bearer {KEY}") == f"Bearer {KEY}"


def test_a_registered_key_is_masked_everywhere_in_the_text() -> None:
    redact.register(KEY)
    assert redact.redact(f"authorization: Bearer {KEY}; again {KEY}.") == (
        "authorization: Bearer ***; again ***."
    )


def test_surrounding_whitespace_is_not_part_of_the_secret() -> None:
    redact.register(f"  {KEY}\n")
    assert redact.redact(f"key={KEY}") == "key=***"


def test_short_and_empty_values_are_ignored() -> None:
    for value in ("", "ollama", "1234567", None):
        redact.register(value)
    assert redact.registered() == 0
    assert redact.redact("ollama serves 1234567 tokens") == "ollama serves 1234567 tokens"
    redact.register("12345678")
    assert redact.redact("x 12345678 y") == "x *** y"


def test_json_and_url_encodings_of_a_key_are_masked() -> None:
    secret = 'p@ss"w/rd\\é-long'
    redact.register(secret)
    assert redact.redact(json.dumps({"k": secret})) == '{"k": "***"}'
    assert redact.redact(json.dumps({"k": secret}, ensure_ascii=False)) == '{"k": "***"}'
    assert redact.redact("a=p%40ss%22w%2Frd%5C%C3%A9-long&b") == "a=***&b"


def test_a_longer_secret_holding_a_shorter_one_is_masked_whole() -> None:
    redact.register("abcdefgh")
    redact.register("abcdefgh-and-more")
    assert redact.redact("x abcdefgh-and-more y abcdefgh") == "x *** y ***"


def test_url_userinfo_password_pair_and_basic_form_are_masked() -> None:
    redact.register_url("https://alice:s3cr%40t-token@api.example.com/v1")
    basic = base64.b64encode(b"alice:s3cr@t-token").decode()
    text = (
        "GET https://alice:s3cr%40t-token@api.example.com/v1 "
        f"authorization: Basic {basic} password s3cr@t-token"
    )
    assert redact.redact(text) == (
        "GET https://***@api.example.com/v1 authorization: Basic *** password ***"
    )
    # the user name alone is no secret when a password goes with it
    assert redact.redact("user alice") == "user alice"


def test_userinfo_without_password_is_a_token() -> None:
    redact.register_url("http://tok-0123456789@127.0.0.1:8080/v1")
    assert redact.redact("sent tok-0123456789") == "sent ***"


def test_urls_without_userinfo_register_nothing() -> None:
    for url in ("https://api.example.com/v1", "no scheme@host", "http://[::1/v1", "", None):
        redact.register_url(url)
    assert redact.registered() == 0


def test_registering_from_many_threads_loses_none() -> None:
    keys = [f"thread-key-{n:04}-abcdef" for n in range(200)]

    def add(part: list[str]) -> None:
        for key in part:
            redact.register(key)

    threads = [threading.Thread(target=add, args=(keys[n::4],)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert redact.redact(" ".join(keys)) == " ".join(["***"] * len(keys))


def test_error_messages_are_masked_when_made() -> None:
    redact.register(KEY)
    error = OverbrainerError(f"HTTP 500: bad header Bearer {KEY}")
    assert error.message == "HTTP 500: bad header Bearer ***"
    assert str(error) == "HTTP 500: bad header Bearer ***"


def test_log_lines_and_their_tracebacks_are_masked() -> None:
    redact.register(KEY)
    stream = io.StringIO()
    reset_logging()
    try:
        init_logging(LogMode.STDERR, environ={}, stream=stream, colour=False, force=True)
        log = logging.getLogger("overbrainer.test_redact")
        try:
            raise RuntimeError(f"bug with {KEY}")
        except RuntimeError:
            log.exception("failed with key %s", KEY)
    finally:
        reset_logging()
    text = stream.getvalue()
    assert KEY not in text
    assert "failed with key ***" in text
    assert "RuntimeError: bug with ***" in text


def test_the_tui_log_buffer_is_masked() -> None:
    redact.register(KEY)
    buffer = LogBuffer()
    reset_logging()
    try:
        init_logging(LogMode.TUI, environ={}, buffer=buffer, force=True)
        logging.getLogger("overbrainer.test_redact").warning("key %s", KEY)
    finally:
        reset_logging()
    latest = buffer.latest(logging.WARNING)
    assert latest is not None and latest.message == "key ***"


def test_the_formatter_masks_a_secret_registered_after_the_record_was_made() -> None:
    record = logging.LogRecord("overbrainer.x", logging.WARNING, "f", 1, "key %s", (KEY,), None)
    redact.register(KEY)
    assert LineFormatter(colour=False).format(record).endswith(" WARN key ***")


def test_event_lines_are_masked(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with JsonlObserver(path) as observer:
        redact.register(KEY)
        observer.event(1, ItemFailed(Stage.ANSWERS, "q1", f"HTTP 500: {KEY}", retryable=True))
    line = path.read_text().strip()
    assert KEY not in line
    assert json.loads(line)["error"] == "HTTP 500: ***"


def test_history_lines_are_masked(tmp_path: Path) -> None:
    redact.register(KEY)
    record = HistoryRecord.from_stats(
        Stage.ANSWERS, "t0", "t1", HistoryStatus.FAILED, "stub", f"model-{KEY}", StageStats()
    )
    path = tmp_path / "history.jsonl"
    assert append_history(path, record)
    assert json.loads(path.read_text())["model"] == "model-***"


def test_config_load_registers_literal_keys_and_url_userinfo(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    env = {
        "OVERBRAINER_PROVIDERS__STUB__API_KEY": KEY,
        "OVERBRAINER_PROVIDERS__STUB__BASE_URL": "https://u:url-password-1@x.example/v1",
        "OVERBRAINER_PROVIDERS__B__PROTOCOL": "openai",
        "OVERBRAINER_PROVIDERS__B__API_KEY": "vault:secret/llm#key",
        "OVERBRAINER_RUNPOD__API_KEY": "rpa_runpod-key-123",
        "OVERBRAINER_HF_TOKEN": "hf_token-abcdef",
        "OVERBRAINER_HUB__BASE_URL": "https://hub-user-token@hub.example",
    }
    load_settings(root, env)
    text = f"{KEY} url-password-1 rpa_runpod-key-123 hf_token-abcdef hub-user-token"
    assert redact.redact(text) == "*** *** *** *** ***"
    assert redact.redact("vault:secret/llm#key") == "vault:secret/llm#key"


async def test_resolved_values_and_the_vault_token_are_registered(tmp_path: Path) -> None:
    assert await resolve_secret(Secret("literal-value-1"), "k", {}) == "literal-value-1"
    assert vault_token({"VAULT_TOKEN": "hvs.vault-token-1"}, tmp_path) == "hvs.vault-token-1"
    (tmp_path / ".vault-token").write_text("hvs.file-token-2\n")
    assert vault_token({}, tmp_path) == "hvs.file-token-2"
    text = "literal-value-1 hvs.vault-token-1 hvs.file-token-2"
    assert redact.redact(text) == "*** *** ***"
