"""A loopback Hub that serves one model repository for downloads (`snapshot_download`).

The push tests' fake Hub (overbrainer/devtools/fake_hub.py) takes uploads only; an export of a
base model given by its Hub ID downloads one. This one answers what huggingface_hub's
`snapshot_download` asks: the repo's revision (`/api/models/<repo>/revision/main`), its file
tree at that commit (`/api/models/<repo>/tree/<sha>`), and each file (`HEAD`/`GET
/<repo>/resolve/<sha>/<path>`, no Xet). Every request is logged, with its Authorization header,
as a JSON line. Run: `python -m tests.hub_model_fake MODEL_DIR REPO URL_FILE LOG_FILE`.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SHA = "0123456789abcdef0123456789abcdef01234567"
"""The commit the repository's `main` is at."""


def _files(model: Path) -> dict[str, bytes]:
    return {
        path.relative_to(model).as_posix(): path.read_bytes()
        for path in sorted(model.rglob("*"))
        if path.is_file()
    }


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def serve(model: Path, repo: str, url_file: Path, log_file: Path) -> None:
    """Serve `model`'s files as `repo` until killed; the URL written to `url_file` once bound."""
    files = _files(model)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _log(self) -> None:
            entry = {
                "method": self.command,
                "path": self.path,
                "authorization": self.headers.get("Authorization"),
            }
            with log_file.open("a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, value: Any) -> None:
            self._send(200, json.dumps(value).encode(), {"Content-Type": "application/json"})

        def _answer(self) -> None:
            self._log()
            path = self.path.split("?", 1)[0]
            api = f"/api/models/{repo}"
            if path in (f"{api}/revision/main", f"{api}/revision/{SHA}"):
                siblings = [{"rfilename": name} for name in files]
                self._json({"id": repo, "sha": SHA, "private": False, "siblings": siblings})
            elif path.startswith(f"{api}/tree/{SHA}"):
                tree = [
                    {"type": "file", "oid": _blob_id(data), "size": len(data), "path": name}
                    for name, data in files.items()
                ]
                self._json(tree)
            elif path.startswith(f"/{repo}/resolve/{SHA}/"):
                name = path.removeprefix(f"/{repo}/resolve/{SHA}/")
                if name not in files:
                    self._send(404, b"", {"X-Error-Code": "EntryNotFound"})
                    return
                data = files[name]
                headers = {"X-Repo-Commit": SHA, "ETag": f'"{_blob_id(data)}"'}
                self._send(200, data, headers)
            else:
                self._send(
                    404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound"}
                )

        do_GET = _answer
        do_HEAD = _answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    part = url_file.with_name(url_file.name + ".part")
    part.write_text(f"http://127.0.0.1:{server.server_address[1]}")
    part.replace(url_file)
    server.serve_forever()


@contextlib.contextmanager
def hub_model(tmp: Path, model: Path, repo: str) -> Iterator[tuple[str, Path]]:
    """Serve `model` as `repo` from a subprocess; its URL and request log, stopped at the end."""
    url_file, log_file = tmp / "hub-model.url", tmp / "hub-model.log"
    log_file.touch()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.hub_model_fake",
            str(model),
            repo,
            str(url_file),
            str(log_file),
        ]
    )
    try:
        deadline = time.monotonic() + 20
        while not url_file.exists():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the model Hub did not start")
            time.sleep(0.02)
        yield url_file.read_text(), log_file
    finally:
        process.kill()
        process.wait()


def requests(log_file: Path) -> list[dict[str, Any]]:
    """The logged requests, in order."""
    return [json.loads(line) for line in log_file.read_text().splitlines()]


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
