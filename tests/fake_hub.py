"""A local stand-in for the Hugging Face Hub: the endpoints ``huggingface_hub`` uses to create a repo, upload a
folder over the plain/LFS path (``HF_HUB_DISABLE_XET=1``) and resolve files. In-process thread, stdlib only.

Endpoints (as called by huggingface_hub 2.4):
    POST /api/repos/create                                  create_repo
    POST /api/validate-yaml                                 README.md metadata check before a commit
    POST /api/models/{repo}/preupload/{revision}            upload mode of each file ("lfs" or "regular")
    POST /{repo}.git/info/lfs/objects/batch                 LFS batch API (basic transfer)
    PUT  /__lfs/{oid}, POST /__lfs/verify                   LFS object upload and verification
    POST /api/models/{repo}/commit/{revision}               the commit, ndjson (header, file, lfsFile, deleted*)
    POST /api/models/{repo}/branch/{branch}                 create_branch
    HEAD|GET /{repo}/resolve/{revision}/{path}              file metadata and download
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

REPO = r"(?P<repo>[^/]+/[^/]+)"


@dataclass
class FakeRepo:
    """A repo: branches of files (path -> bytes), which paths are LFS, and the commit log."""

    private: bool
    branches: dict[str, dict[str, bytes]] = field(default_factory=lambda: {"main": {}})
    heads: dict[str, str] = field(default_factory=lambda: {"main": "0" * 40})
    lfs_paths: set[str] = field(default_factory=set)
    commits: list[dict[str, Any]] = field(default_factory=list)

    def write_branch(self, branch: str, folder: Path) -> Path:
        """Write the files of a branch to ``folder`` (the repo as a download would give it)."""
        for path, content in self.branches[branch].items():
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        return folder


class FakeHub:
    """Run with ``with FakeHub(token="hf_...") as hub:``; point clients at ``hub.url`` (``HF_ENDPOINT``)."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.repos: dict[str, FakeRepo] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _git_blob_sha1(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _handler_class(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        # ------------------------------------------------------------------ plumbing
        def _read_body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0], 16)
                    if size == 0:
                        self.rfile.readline()
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, payload: Any) -> None:
            self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

        def _authorize(self) -> None:
            if hub.token is not None and self.headers.get("Authorization") != f"Bearer {hub.token}":
                raise HubError(401, "Invalid credentials in Authorization header")

        def _repo(self, repo_id: str) -> FakeRepo:
            if repo_id not in hub.repos:
                raise HubError(404, f"Repository {repo_id} not found", "RepoNotFound")
            return hub.repos[repo_id]

        def _dispatch(self) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.calls.append((self.command, path))
            self.body = self._read_body()  # always consumed: the connection is kept alive for the next request
            routes = [
                ("POST", r"/api/repos/create", self._create_repo),
                ("POST", r"/api/validate-yaml", self._validate_yaml),
                ("POST", rf"/api/models/{REPO}/preupload/(?P<revision>.+)", self._preupload),
                ("POST", rf"/{REPO}\.git/info/lfs/objects/batch", self._lfs_batch),
                ("PUT", r"/__lfs/(?P<oid>[0-9a-f]{64})", self._lfs_put),
                ("POST", r"/__lfs/verify", self._lfs_verify),
                ("POST", rf"/api/models/{REPO}/commit/(?P<revision>.+)", self._commit),
                ("POST", rf"/api/models/{REPO}/branch/(?P<branch>.+)", self._create_branch),
                ("HEAD", rf"/{REPO}/resolve/(?P<revision>[^/]+)/(?P<file>.+)", self._resolve),
                ("GET", rf"/{REPO}/resolve/(?P<revision>[^/]+)/(?P<file>.+)", self._resolve),
            ]
            try:
                for method, pattern, action in routes:
                    match = re.fullmatch(pattern, path)
                    if method == self.command and match:
                        with hub._lock:
                            action(**match.groupdict())
                        return
                raise HubError(404, f"{self.command} {path} is not served by the fake Hub")
            except HubError as error:
                headers = {"Content-Type": "application/json", "X-Error-Message": error.message}
                if error.code:
                    headers["X-Error-Code"] = error.code
                self._send(error.status, json.dumps({"error": error.message}).encode(), headers)

        do_GET = do_POST = do_PUT = do_HEAD = _dispatch

        # ------------------------------------------------------------------ endpoints
        def _create_repo(self) -> None:
            self._authorize()
            payload = json.loads(self.body)
            repo_id = f"{payload['organization']}/{payload['name']}"
            if repo_id in hub.repos:
                raise HubError(409, "You already created this model repo")
            hub.repos[repo_id] = FakeRepo(
                private=payload.get("visibility") == "private" or payload.get("private") is True
            )
            self._json(200, {"url": f"{hub.url}/{repo_id}", "name": repo_id})

        def _validate_yaml(self) -> None:
            content = json.loads(self.body)["content"]
            match = re.match(r"---\n(.*?)\n---\n", content, re.S)
            try:
                metadata = yaml.safe_load(match.group(1)) if match else {}
            except yaml.YAMLError as error:
                self._json(400, {"errors": [{"message": f"invalid YAML: {error}"}]})
                return
            if not isinstance(metadata, dict):
                self._json(400, {"errors": [{"message": "metadata must be a mapping"}]})
                return
            self._json(200, {"errors": [], "warnings": []})

        def _preupload(self, repo: str, revision: str) -> None:
            self._authorize()
            self._repo(repo)
            files = json.loads(self.body)["files"]
            modes = []
            for item in files:
                sample = base64.b64decode(item["sample"])
                lfs = item["path"].endswith((".safetensors", ".bin", ".npy")) or b"\0" in sample
                modes.append({"path": item["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False})
            self._json(200, {"files": modes, "commitOid": self._repo(repo).heads.get(revision)})

        def _lfs_batch(self, repo: str) -> None:
            self._authorize()
            self._repo(repo)
            payload = json.loads(self.body)
            objects = []
            for item in payload["objects"]:
                entry = {"oid": item["oid"], "size": item["size"]}
                if item["oid"] not in hub.lfs_objects:
                    entry["authenticated"] = True
                    entry["actions"] = {
                        "upload": {"href": f"{hub.url}/__lfs/{item['oid']}"},
                        "verify": {"href": f"{hub.url}/__lfs/verify"},
                    }
                objects.append(entry)
            self._json(200, {"transfer": "basic", "objects": objects})

        def _lfs_put(self, oid: str) -> None:
            content = self.body
            if hashlib.sha256(content).hexdigest() != oid:
                raise HubError(400, "uploaded content does not match its oid")
            hub.lfs_objects[oid] = content
            self._send(200)

        def _lfs_verify(self) -> None:
            payload = json.loads(self.body)
            stored = hub.lfs_objects.get(payload["oid"])
            if stored is None or len(stored) != payload["size"]:
                raise HubError(404, f"LFS object {payload['oid']} not found")
            self._json(200, {"success": True})

        def _commit(self, repo: str, revision: str) -> None:
            self._authorize()
            fake_repo = self._repo(repo)
            if revision not in fake_repo.branches:
                raise HubError(404, f"Revision {revision} not found", "RevisionNotFound")
            files = dict(fake_repo.branches[revision])
            lines = [json.loads(line) for line in self.body.splitlines() if line.strip()]
            header = next(line["value"] for line in lines if line["key"] == "header")
            for line in lines:
                key, value = line["key"], line["value"]
                if key == "file":
                    files[value["path"]] = base64.b64decode(value["content"])
                    fake_repo.lfs_paths.discard(value["path"])
                elif key == "lfsFile":
                    if value["oid"] not in hub.lfs_objects:
                        raise HubError(400, f"LFS object of {value['path']} was never uploaded")
                    files[value["path"]] = hub.lfs_objects[value["oid"]]
                    fake_repo.lfs_paths.add(value["path"])
                elif key == "deletedFile":
                    files.pop(value["path"], None)
                elif key == "deletedFolder":
                    files = {path: data for path, data in files.items() if not path.startswith(value["path"])}
            parent = fake_repo.heads[revision]
            oid = hashlib.sha1((parent + json.dumps(lines, sort_keys=True)).encode()).hexdigest()
            fake_repo.branches[revision] = files
            fake_repo.heads[revision] = oid
            fake_repo.commits.append({"oid": oid, "branch": revision, "summary": header["summary"]})
            self._json(
                200,
                {
                    "success": True,
                    "commitOid": oid,
                    "commitUrl": f"{hub.url}/{repo}/commit/{oid}",
                    "pullRequestUrl": None,
                },
            )

        def _create_branch(self, repo: str, branch: str) -> None:
            self._authorize()
            fake_repo = self._repo(repo)
            if branch in fake_repo.branches:
                raise HubError(409, f"Reference already exists: refs/heads/{branch}")
            fake_repo.branches[branch] = dict(fake_repo.branches["main"])
            fake_repo.heads[branch] = fake_repo.heads["main"]
            self._send(200)

        def _resolve(self, repo: str, revision: str, file: str) -> None:
            fake_repo = self._repo(repo)
            if fake_repo.private:
                self._authorize()
            if revision not in fake_repo.branches:
                raise HubError(404, f"Revision {revision} not found", "RevisionNotFound")
            content = fake_repo.branches[revision].get(file)
            if content is None:
                raise HubError(404, "Entry not found", "EntryNotFound")
            headers = {"X-Repo-Commit": fake_repo.heads[revision], "Content-Type": "application/octet-stream"}
            if file in fake_repo.lfs_paths:
                sha256 = hashlib.sha256(content).hexdigest()
                headers.update(
                    {"ETag": f'"{sha256}"', "X-Linked-Etag": f'"{sha256}"', "X-Linked-Size": str(len(content))}
                )
            else:
                headers["ETag"] = f'"{_git_blob_sha1(content)}"'
            self._send(200, content, headers)

    return Handler
