"""A loopback stand-in for the Hugging Face Hub: the calls `huggingface_hub` makes for a push.

Run as `python -m overbrainer.devtools.fake_hub PORT_FILE`: it serves on 127.0.0.1 (port 0),
writes its base URL to PORT_FILE, and keeps its repos and LFS objects in memory. Model and
dataset repos (keyed `owner/name` and `datasets/owner/name`, as the Hub's paths spell them).
Calls:
whoami-v2, model info, repo create, README resolve (HEAD/GET), validate-yaml, preupload, LFS
batch + basic upload + verify, commit (NDJSON). Tests steer it through `POST /_control`
(token, user, per-call status, an error echoing the Authorization header, LFS uploads or
commits held unanswered until the test releases them, seeded repos) and read `GET /_log`.
Xet is not spoken: run the client with HF_HUB_DISABLE_XET=1.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LFS_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt")
LFS_THRESHOLD = 5_000_000
_REPO = r"(?P<repo>[^/]+/[^/]+)"
# The Hub's two spellings of a repo type: `/api/models/…` or `/api/datasets/…` in its API, and
# no prefix (a model) or `datasets/` in its web and git paths.
_API = r"/api/(?P<api>models|datasets)"
_WEB = r"/(?P<web>datasets/)?"
_ROUTES = [
    ("GET", re.compile(r"/api/whoami-v2"), "whoami"),
    ("GET", re.compile(rf"{_API}/{_REPO}(?:/revision/main)?"), "info"),
    ("POST", re.compile(r"/api/repos/create"), "create"),
    ("POST", re.compile(r"/api/validate-yaml"), "validate"),
    ("HEAD", re.compile(rf"{_WEB}{_REPO}/resolve/main/README\.md"), "card"),
    ("GET", re.compile(rf"{_WEB}{_REPO}/resolve/main/README\.md"), "card"),
    ("POST", re.compile(rf"{_API}/{_REPO}/preupload/main"), "preupload"),
    ("POST", re.compile(rf"{_WEB}{_REPO}\.git/info/lfs/objects/batch"), "batch"),
    ("PUT", re.compile(r"/_lfs/(?P<oid>[0-9a-f]{64})"), "upload"),
    ("POST", re.compile(r"/_lfs_verify"), "verify"),
    ("POST", re.compile(rf"{_API}/{_REPO}/commit/main"), "commit"),
]
REPO_TYPES = ("model", "dataset")
HOLD_LIMIT = 120.0
"""Seconds a held call waits at most for its release (a test that forgets it ends anyway)."""


def repo_key(groups: dict[str, str]) -> str:
    """The fake's key of a routed repo: `owner/name` for a model, `datasets/owner/name`."""
    dataset = groups.get("api") == "datasets" or groups.get("web") == "datasets/"
    return f"datasets/{groups['repo']}" if dataset else groups["repo"]


class Hub:
    """The fake's state: settings, repos, LFS objects and the request log."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.token = "hf_fake_token_0123456789"
        self.user = "alice"
        self.status: dict[str, int] = {}
        self.hold: dict[str, int] = {}
        """Calls held unanswered: `{"upload": 1}` answers the first upload and holds the later
        ones until `hold` no longer names `upload`."""
        self.calls: dict[str, int] = {}
        self.released = threading.Condition(self.lock)
        self.echo_auth = False
        self.repos: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, int] = {}
        self.log: list[dict[str, Any]] = []
        self.base = ""


HUB = Hub()


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Handler(BaseHTTPRequestHandler):
    """One request: route, check the token and answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the log is served at /_log."""

    def _body(self, stream: bool = False) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _dispatch(self) -> None:
        path = self.path.partition("?")[0]
        if path == "/_control" and self.command == "POST":
            self._control(json.loads(self._body()))
            return
        if path == "/_log":
            with HUB.lock:
                self._send(200, HUB.log)
            return
        for method, pattern, name in _ROUTES:
            match = pattern.fullmatch(path)
            if method == self.command and match:
                self._route(name, match.groupdict())
                return
        self._body()
        self._send(404, {"error": "not found"})

    def _route(self, name: str, groups: dict[str, str]) -> None:
        auth = self.headers.get("Authorization", "")
        entry = {"call": name, "method": self.command, "path": self.path, "auth": auth}
        with HUB.lock:
            HUB.log.append(entry)
            status = HUB.status.get(name)
            HUB.calls[name] = count = HUB.calls.get(name, 0) + 1
            held = count > HUB.hold.get(name, count)
        if name == "upload":
            self._upload(groups["oid"], entry, held)
            return
        if "repo" in groups:
            groups = {**groups, "repo": repo_key(groups)}
        body = self._body()
        if status is not None:
            echo = f"; you sent {auth}" if HUB.echo_auth else ""
            self._send(status, {"error": f"fake {status} for {name}{echo}"})
            return
        if held:
            _wait_for_release(name)
        if name not in ("card",) and auth != f"Bearer {HUB.token}":
            self._send(401, {"error": "Invalid credentials in Authorization header"})
            return
        getattr(self, f"_{name}")(groups, body)

    def _control(self, change: dict[str, Any]) -> None:
        with HUB.lock:
            for key in ("token", "user", "status", "hold", "echo_auth"):
                if key in change:
                    setattr(HUB, key, change[key])
            HUB.released.notify_all()
            for repo, private in change.get("repos", {}).items():
                HUB.repos[repo] = {"private": private, "files": {}, "sha": "0" * 40}
            for repo, text in change.get("cards", {}).items():
                data = text.encode()
                HUB.repos[repo]["files"]["README.md"] = {"oid": _git_sha1(data), "data": data}
        self._send(200, {})

    def _whoami(self, groups: dict[str, str], body: bytes) -> None:
        self._send(200, {"type": "user", "name": HUB.user})

    def _info(self, groups: dict[str, str], body: bytes) -> None:
        repo = HUB.repos.get(groups["repo"])
        if repo is None:
            self._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            return
        siblings = [{"rfilename": path} for path in sorted(repo["files"])]
        repo_id = groups["repo"].removeprefix("datasets/")
        info = {"id": repo_id, "private": repo["private"], "sha": repo["sha"]}
        self._send(200, {**info, "siblings": siblings})

    def _create(self, groups: dict[str, str], body: bytes) -> None:
        asked = json.loads(body)
        kind = asked.get("type", "model")
        if kind not in REPO_TYPES:
            self._send(400, {"error": f"Invalid repo type: {kind}"})
            return
        repo = f"{asked.get('organization') or HUB.user}/{asked['name']}"
        url = f"{HUB.base}/{repo}" if kind == "model" else f"{HUB.base}/datasets/{repo}"
        if kind == "dataset":
            repo = f"datasets/{repo}"
        with HUB.lock:
            if repo in HUB.repos:
                self._send(409, {"error": f"You already created this {kind} repo"})
                return
            private = asked.get("private", asked.get("visibility") == "private")
            HUB.repos[repo] = {"private": bool(private), "files": {}, "sha": "0" * 40}
        self._send(200, {"url": url})

    def _validate(self, groups: dict[str, str], body: bytes) -> None:
        self._send(200, {"errors": [], "warnings": []})

    def _card(self, groups: dict[str, str], body: bytes) -> None:
        repo = HUB.repos.get(groups["repo"])
        found = None if repo is None else repo["files"].get("README.md")
        if found is None:
            self._send(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(found["data"])))
        self.send_header("ETag", f'"{found["oid"]}"')
        self.send_header("X-Repo-Commit", repo["sha"] if repo else "")
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(found["data"])

    def _preupload(self, groups: dict[str, str], body: bytes) -> None:
        repo = HUB.repos.get(groups["repo"])
        if repo is None:
            self._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            return
        files = []
        for item in json.loads(body)["files"]:
            lfs = item["path"].endswith(LFS_SUFFIXES) or item["size"] > LFS_THRESHOLD
            known = repo["files"].get(item["path"])
            files.append(
                {
                    "path": item["path"],
                    "uploadMode": "lfs" if lfs else "regular",
                    "shouldIgnore": False,
                    "oid": None if known is None else known["oid"],
                }
            )
        self._send(200, {"files": files, "commitOid": repo["sha"]})

    def _batch(self, groups: dict[str, str], body: bytes) -> None:
        objects = []
        for item in json.loads(body)["objects"]:
            oid, size = item["oid"], item["size"]
            if oid in HUB.objects:
                objects.append({"oid": oid, "size": size})
                continue
            upload = {"href": f"{HUB.base}/_lfs/{oid}"}
            verify = {"href": f"{HUB.base}/_lfs_verify"}
            objects.append(
                {"oid": oid, "size": size, "actions": {"upload": upload, "verify": verify}}
            )
        self._send(200, {"transfer": "basic", "objects": objects})

    def _upload(self, oid: str, entry: dict[str, Any], held: bool) -> None:
        length = int(self.headers.get("Content-Length", "-1"))
        digest = hashlib.sha256()
        got = 0
        while length < 0 or got < length:
            chunk = self.rfile.read(min(1 << 20, length - got) if length >= 0 else 1 << 20)
            if not chunk:
                break
            digest.update(chunk)
            got += len(chunk)
        if held:
            _wait_for_release("upload")
        entry["bytes"] = got
        if digest.hexdigest() != oid:
            self._send(400, {"error": "sha256 mismatch"})
            return
        with HUB.lock:
            HUB.objects[oid] = got
        self._send(200, {})

    def _verify(self, groups: dict[str, str], body: bytes) -> None:
        oid = json.loads(body)["oid"]
        self._send(200 if oid in HUB.objects else 404, {})

    def _commit(self, groups: dict[str, str], body: bytes) -> None:
        repo = HUB.repos[groups["repo"]]
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header, operations = lines[0], lines[1:]
        changed: dict[str, dict[str, Any]] = {}
        for op in operations:
            value = op["value"]
            if op["key"] == "file":
                data = base64.b64decode(value["content"])
                changed[value["path"]] = {"oid": _git_sha1(data), "data": data}
            elif op["key"] == "lfsFile":
                if value["oid"] not in HUB.objects:
                    self._send(422, {"error": f"LFS object {value['oid']} is missing"})
                    return
                changed[value["path"]] = {"oid": value["oid"], "data": None}
        oid = secrets.token_hex(20)
        with HUB.lock:
            # What the commit changed, as the Hub's diff shows it: a file sent again with the
            # content it has is no change (huggingface_hub before 1.17 sends unchanged files
            # along with a changed one; 1.17 leaves them out).
            files = repo["files"]
            differ = [
                path
                for path, new in changed.items()
                if files.get(path, {}).get("oid") != new["oid"]
            ]
            files.update(changed)
            repo["sha"] = oid
            HUB.log[-1]["commit"] = {
                "summary": header["value"]["summary"],
                "files": sorted(differ),
            }
        url = f"{HUB.base}/{groups['repo']}/commit/{oid}"  # `datasets/…` for a dataset
        self._send(200, {"commitUrl": url, "commitOid": oid})

    do_GET = do_POST = do_PUT = do_HEAD = _dispatch


def _wait_for_release(name: str) -> None:
    """Hold a call of kind `name` until `hold` no longer names it (bounded by HOLD_LIMIT)."""
    with HUB.lock:
        HUB.released.wait_for(lambda: name not in HUB.hold, timeout=HOLD_LIMIT)


def main(port_file: str) -> None:
    """Serve until killed; the base URL goes to `port_file` once listening."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    HUB.base = f"http://127.0.0.1:{server.server_address[1]}"
    Path(port_file + ".tmp").write_text(HUB.base)
    Path(port_file + ".tmp").rename(port_file)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
