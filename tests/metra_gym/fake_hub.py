"""A small Hugging Face Hub stand-in on 127.0.0.1: enough of ``/{repo}/resolve/{rev}/{file}`` for
``hf_hub_download`` (HEAD for metadata, GET for content), with the Hub's error codes."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FakeHub:
    """``repos[repo_id][revision] = (commit_sha, {filename: bytes})``; ``truncate`` names files served cut short."""

    def __init__(self) -> None:
        self.repos: dict[str, dict[str, tuple[str, dict[str, bytes]]]] = {}
        self.truncate: set[str] = set()
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _error(self, code: str) -> None:
                self.send_response(404)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _serve(self, body: bool) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                parts = self.path.split("?")[0].strip("/").split("/")
                if len(parts) < 5 or parts[2] != "resolve":
                    return self._error("RepoNotFound")
                repo, revision, filename = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
                if repo not in hub.repos:
                    return self._error("RepoNotFound")
                if revision not in hub.repos[repo]:
                    return self._error("RevisionNotFound")
                sha, files = hub.repos[repo][revision]
                if filename not in files:
                    return self._error("EntryNotFound")
                data = files[filename]
                self.send_response(200)
                self.send_header("X-Repo-Commit", sha)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data[: len(data) // 2] if filename in hub.truncate else data)
                    if filename in hub.truncate:
                        self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add_checkpoint(self, repo_id: str, folder: Path, revision: str = "main", sha: str | None = None) -> str:
        sha = sha or hashlib.sha1(f"{repo_id}@{revision}".encode()).hexdigest()
        files = {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}
        self.repos.setdefault(repo_id, {})[revision] = (sha, files)
        self.repos[repo_id][sha] = (sha, files)
        return sha

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
