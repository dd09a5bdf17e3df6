"""The `pod` commands' tests: the fake Runpod served for a test, and `overbrainer pod ARGS`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from tests.pipeline_support import Result, overbrainer
from tests.runpod_fake import KEY, RunpodFake, open_fake


@pytest.fixture(name="fake")
async def fake_fixture() -> AsyncIterator[RunpodFake]:
    """The fake Runpod for one test; an exchange off its published API fails the test."""
    with trio.fail_after(60):
        async with open_fake() as served:
            yield served
    assert served.violations == []


async def pod(root: Path, fake: RunpodFake, *args: str, key: str | None = KEY) -> Result:
    """`overbrainer pod ARGS` on `root` against `fake` (no key at all with `key=None`)."""
    env = {"OVERBRAINER_RUNPOD__BASE_URL": fake.url}
    if key is not None:
        env["OVERBRAINER_RUNPOD__API_KEY"] = key
    return await overbrainer(root, "pod", *args, url="http://127.0.0.1:9/v1", env=env)
