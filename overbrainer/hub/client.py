"""The Hub calls of a push, on `huggingface_hub` (blocking: run each in `trio.to_thread`).

The library is made quiet and token-blind before its first import: no progress bars, no
telemetry, no implicit token (`HF_TOKEN`, the token file): every call gets our token
explicitly. Its errors become HubFailed with the spec's messages; the token never appears.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from overbrainer import __version__
from overbrainer.hub.errors import HubFailed
from overbrainer.hub.repo import RepoId
from overbrainer.model import redact

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd, HfApi

LIBRARY_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    "HF_TOKEN_PATH": os.devnull,
}
TOKEN_IN_MESSAGE = "Hugging Face request failed (its message quoted the token and is not shown)"

_prepared = threading.Lock()


def prepare_library() -> None:
    """Set the library's switches; they are read when it is first imported."""
    with _prepared:
        for key, value in LIBRARY_ENV.items():
            os.environ[key] = value
        from huggingface_hub import set_client_factory
        from huggingface_hub.utils.tqdm import disable_progress_bars

        disable_progress_bars()
        set_client_factory(_client)
        # Its notes ("no files have been modified…") would bypass our log format.
        logging.getLogger("huggingface_hub").setLevel(logging.ERROR)


CONNECT_TIMEOUT_S = 10.0


def http_package() -> ModuleType:
    """The HTTP package the installed library is built on: `httpx2` from huggingface_hub 2.0,
    `httpx` in 1.x. Its client and its errors are the ones the library hands back."""
    from huggingface_hub.utils import _http

    package = getattr(_http, "httpx2", None) or getattr(_http, "httpx", None)
    if not isinstance(package, ModuleType):
        raise RuntimeError("huggingface_hub is built on neither httpx2 nor httpx")
    return package


def _client() -> Any:
    """The library's HTTP client: a 10 s connect timeout, no total one (uploads take long)."""
    from huggingface_hub.utils._http import hf_request_event_hook

    http = http_package()
    return http.Client(
        event_hooks={"request": [hf_request_event_hook]},
        follow_redirects=True,
        timeout=http.Timeout(None, connect=CONNECT_TIMEOUT_S),
    )


def xet_in_use() -> bool:
    """Whether uploads go through Xet (paths only: progress per file) rather than LFS."""
    prepare_library()
    from huggingface_hub.utils._runtime import is_xet_available

    return bool(is_xet_available())


class CountingReader(io.BufferedReader):
    """A file the library reads for an LFS upload; counts the bytes read since the last rewind.

    Counting starts when `counting` is set, after the library has hashed the file.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(io.FileIO(path, "rb"), buffer_size=1 << 20)
        self.counting = False
        self.read_bytes = 0
        """The furthest point read while counting: a retried upload rereads, never recounts."""

    def read(self, size: int | None = -1, /) -> bytes:
        """Read and count."""
        data = super().read(size)
        if self.counting:
            self.read_bytes = max(self.read_bytes, self.tell())
        return data


def unreachable_reason(error: BaseException) -> str | None:
    """Why no connection to the Hub could be made, in a few words; None when one was made."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return "name not resolved"
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(current, TimeoutError) or type(current).__name__ == "ConnectTimeout":
            return "connection timed out"
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def hub_error(error: BaseException, namespace: str, token: str, host: str = "") -> HubFailed:
    """The spec's message for a failed Hub call (401, 403, 429, others); `cannot reach HOST:
    WHY` when no connection was made, never the library's `[Errno -2] …`."""
    from huggingface_hub.errors import HfHubHTTPError

    reason = unreachable_reason(error)
    if reason is not None and host:
        return HubFailed(f"cannot reach {host}: {reason}")
    status = None
    if isinstance(error, HfHubHTTPError) and error.response is not None:
        status = error.response.status_code
    if status == 401:
        return HubFailed(
            "Hugging Face refused the token: set OVERBRAINER_HF_TOKEN to a valid token with "
            "write access"
        )
    if status == 403:
        return HubFailed(
            f"the Hugging Face token needs write access to {namespace}: set "
            "OVERBRAINER_HF_TOKEN to a token that has it"
        )
    if status == 429:
        return HubFailed("Hugging Face rate limit, retry later")
    text = " ".join(str(error).split()) or type(error).__name__
    cause = error.__cause__
    if isinstance(error, RuntimeError) and cause is not None:
        text = f"{text}: {' '.join(str(cause).split())}"
    if token and token in text:
        return HubFailed(TOKEN_IN_MESSAGE)
    return HubFailed(f"Hugging Face request failed: {redact.redact(text)}")


@attrs.frozen
class Committed:
    """A commit the Hub made: its URL and OID."""

    url: str
    oid: str


class HubClient:
    """One push's view of the Hub: the endpoint, the token, the repo type, the calls of §C.3."""

    def __init__(self, endpoint: str, token: str, repo_type: str = "model") -> None:
        prepare_library()
        from huggingface_hub import HfApi

        self.token = token
        self.host = urlsplit(endpoint).hostname or endpoint
        """The Hub's host, named when it cannot be reached."""
        self.repo_type = repo_type
        """`model` (a run) or `dataset` (the project's train and eval files)."""
        self.api: HfApi = HfApi(
            endpoint=endpoint.rstrip("/"),
            token=token,
            library_name="overbrainer",
            library_version=__version__,
        )

    def call(self, namespace: str, work: Callable[[], Any]) -> Any:
        """Run `work`, turning the library's errors into HubFailed."""
        from huggingface_hub.errors import HfHubHTTPError

        http_error = http_package().HTTPError
        try:
            return work()
        except HubFailed:
            raise
        except (HfHubHTTPError, http_error, OSError, ValueError, RuntimeError) as error:
            raise hub_error(error, namespace, self.token, self.host) from None

    def whoami(self) -> str:
        """The token's user name."""
        info = self.call("your account", lambda: self.api.whoami(token=self.token, cache=False))
        name = info.get("name") if isinstance(info, dict) else None
        if not isinstance(name, str) or not name:
            raise HubFailed("Hugging Face request failed: whoami returned no name")
        return name

    def visibility(self, repo: RepoId) -> bool | None:
        """Whether the repo is private; None when it does not exist."""
        from huggingface_hub.errors import RepositoryNotFoundError

        def info() -> bool | None:
            try:
                model = self.api.repo_info(str(repo), repo_type=self.repo_type, token=self.token)
            except RepositoryNotFoundError as error:
                # The library files a 401 under "not found"; with our token it is a bad token.
                if error.response is not None and error.response.status_code == 401:
                    raise hub_error(error, repo.namespace, self.token) from None
                return None
            return True if model.private is None else bool(model.private)

        result: bool | None = self.call(repo.namespace, info)
        return result

    def create(self, repo: RepoId, private: bool) -> None:
        """Create the repo (an existing one is fine)."""
        self.call(
            repo.namespace,
            lambda: self.api.create_repo(
                str(repo),
                token=self.token,
                private=private,
                repo_type=self.repo_type,
                exist_ok=True,
            ),
        )

    def remote_card(self, repo: RepoId) -> str | None:
        """The repo's README.md on `main`, None when it has none."""
        from huggingface_hub import get_session, hf_hub_url, hf_raise_for_status
        from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError
        from huggingface_hub.utils._headers import build_hf_headers

        url = hf_hub_url(
            str(repo), "README.md", repo_type=self.repo_type, endpoint=self.api.endpoint
        )
        headers = build_hf_headers(
            token=self.token, library_name="overbrainer", library_version=__version__
        )

        def fetch() -> str | None:
            try:
                head = get_session().head(url, headers=headers, follow_redirects=True)
                if head.status_code == 404:
                    return None
                hf_raise_for_status(head)
                response = get_session().get(url, headers=headers, follow_redirects=True)
                if response.status_code == 404:
                    return None
                hf_raise_for_status(response)
            except (EntryNotFoundError, RepositoryNotFoundError):
                return None
            return response.content.decode("utf-8", errors="replace")

        result: str | None = self.call(repo.namespace, fetch)
        return result

    def base_license(self, base_model: str) -> str | None:
        """The license in a Hub base model's card data; None when unknown or not found."""
        try:
            model = self.api.model_info(base_model, token=self.token, expand=["cardData"])
        except Exception:  # only decorates the card: any failure means "unknown"
            return None
        data = model.card_data
        license_ = data.get("license") if data is not None else None
        return license_ if isinstance(license_, str) and license_ else None

    def operation(self, local: Path | CountingReader, repo_path: str) -> CommitOperationAdd:
        """The library's add operation for one file (hashes a reader's file: blocking)."""
        from huggingface_hub import CommitOperationAdd

        return CommitOperationAdd(path_in_repo=repo_path, path_or_fileobj=local)

    def preupload(self, repo: RepoId, operation: CommitOperationAdd) -> None:
        """Upload one file's content if it is LFS/Xet and not stored yet (no commit)."""
        self.call(
            repo.namespace,
            lambda: self.api.preupload_lfs_files(
                str(repo),
                additions=[operation],
                token=self.token,
                repo_type=self.repo_type,
                num_threads=1,
            ),
        )

    def commit(self, repo: RepoId, operations: list[CommitOperationAdd], message: str) -> Committed:
        """One commit of every operation; returns its URL and OID."""
        info = self.call(
            repo.namespace,
            lambda: self.api.create_commit(
                str(repo),
                operations=operations,
                commit_message=message,
                token=self.token,
                repo_type=self.repo_type,
            ),
        )
        return Committed(str(info.commit_url), str(info.oid))
