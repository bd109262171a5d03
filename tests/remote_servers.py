# Strategy: HTTP servers on 127.0.0.1 for the remote tests and benchmarks,
# started by the tests themselves on a free port in a daemon thread.  One
# handler serves a table of resources; a resource is a size and a function
# from (offset, length) to bytes, so a 1 GB file is synthesized on the fly
# instead of written to disk.  Every byte the server writes is counted per
# path, and every request is logged, so a test can assert how much a check
# transferred.  Hostile behaviours are switches on the resource:
# Range ignored, a lying total, a short body, stalls, slow drips (of the
# body, or of the status line and headers), redirect loops, content codings,
# no length.  A drip of the headers is bounded in time (head_drip_for): the
# server then finishes the response, so no test can leave it running.  The fake hub answers the two routes
# huggingface_hub's repo_info and our resolve URLs use:
#   GET /api/{models,datasets}/{repo}[/revision/{rev}]   -> repo JSON with siblings
#   GET /{[datasets/]repo}/resolve/{rev}/{path}           -> 302 to /cdn/{sha256} (LFS files)
#                                                            or 200 (small git files)
from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass
class Resource:
    size: int
    read: Callable[[int, int], bytes]
    ignore_range: bool = False  # answer 200 with the whole body
    no_length: bool = False  # no Content-Length (close-delimited body)
    total_override: int | None = None  # lie about the total in Content-Range
    body_cut: int | None = None  # close the connection after this many body bytes
    stall: float = 0.0  # sleep before the status line
    drip: float = 0.0  # sleep between 1-byte writes of the body
    head_drip: float = 0.0  # sleep between 1-byte writes of the status line and headers
    head_drip_for: float = 15.0  # ...for at most this long, then the rest at once
    encoding: str | None = None  # Content-Encoding to claim
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)  # extra headers
    range_total_star: bool = False  # Content-Range: bytes a-b/*
    wrong_start: bool = False  # answer a range other than the one asked
    requires: dict[str, str] = field(default_factory=dict)  # request headers without which the answer is 401


def from_bytes(data: bytes, **kw: Any) -> Resource:
    return Resource(len(data), lambda off, n: data[off : off + n], **kw)


def synthesized(head: bytes, size: int, **kw: Any) -> Resource:
    """``head`` followed by zeros up to ``size`` bytes, never materialised."""

    def read(off: int, n: int) -> bytes:
        n = max(0, min(n, size - off))
        part = head[off : off + n]
        return part + bytes(n - len(part))

    return Resource(size, read, **kw)


class Site:
    def __init__(self) -> None:
        self.resources: dict[str, Resource] = {}
        self.redirects: dict[str, tuple[int, str, dict[str, str]]] = {}
        self.sent: dict[str, int] = {}
        self.log: list[tuple[str, str | None]] = []  # (path, Range header)
        self.request_headers: list[tuple[str, dict[str, str]]] = []  # (path, every request header)
        self.latency = 0.0
        self.rate = 0.0  # bytes per second per response; 0: as fast as the socket takes them
        self.hub: FakeHub | None = None
        self.lock = threading.Lock()
        self.writing = 0  # handlers between the start of a write and its count

    def count(self, path: str, n: int) -> None:
        with self.lock:
            self.sent[path] = self.sent.get(path, 0) + n

    def total_sent(self) -> int:
        # A handler counts after its write returns, which can be after the
        # client has read the bytes and moved on: let writes in flight land.
        deadline = time.monotonic() + 5
        while self.writing and time.monotonic() < deadline:
            time.sleep(0.005)
        return sum(self.sent.values())


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    site: Site

    def log_message(self, *args: Any) -> None:
        pass

    def _write(self, path: str, data: bytes) -> None:
        with self.site.lock:
            self.site.writing += 1
        try:
            self.wfile.write(data)
            self.site.count(path, len(data))
        finally:
            with self.site.lock:
                self.site.writing -= 1

    def _simple(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._write(self.path, body)

    def do_GET(self) -> None:
        site = self.site
        path = urllib.parse.urlsplit(self.path).path
        with site.lock:
            site.log.append((path, self.headers.get("Range")))
            site.request_headers.append((path, dict(self.headers.items())))
        if site.latency:
            time.sleep(site.latency)
        if site.hub is not None and site.hub.handle(self, path):
            return
        if path in site.redirects:
            status, target, extra = site.redirects[path]
            self.send_response(status)
            self.send_header("Location", target)
            for k, v in extra.items():
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        res = site.resources.get(path)
        if res is None:
            self._simple(404, b"not found")
            return
        if any(self.headers.get(k) != v for k, v in res.requires.items()):
            self._simple(401, b"unauthorised")
            return
        self.serve(path, res)

    def drip_head(self, path: str, every: float, limit: float) -> None:
        """Write the status line and headers buffered so far one byte at a
        time, with a header that grows a byte per ``every`` seconds, for at
        most ``limit`` seconds; then end the headers."""
        head = b"".join(self._headers_buffer)
        self._headers_buffer = []
        stop = time.monotonic() + limit
        try:
            for k in range(len(head) - 2):  # all but the blank line that ends the headers
                self._write(path, head[k : k + 1])
                time.sleep(every)
            self._write(path, b"X-Drip: ")
            while time.monotonic() < stop:
                self._write(path, b"a")
                self.wfile.flush()
                time.sleep(every)
            self._write(path, b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def serve(self, path: str, res: Resource) -> None:
        if res.stall:
            time.sleep(res.stall)
        if res.status != 200:
            self._simple(res.status, b"error")
            return
        match = _RANGE.fullmatch(self.headers.get("Range") or "")
        start, end, status = 0, res.size - 1, 200
        if match and not res.ignore_range:
            start = int(match.group(1))
            end = min(int(match.group(2)), res.size - 1) if match.group(2) else res.size - 1
            if start >= res.size:
                self._simple(416, b"", {"Content-Range": f"bytes */{res.size}"})
                return
            status = 206
            if res.wrong_start:
                start += 1
        length = end - start + 1
        self.send_response(status)
        if status == 206:
            total = "*" if res.range_total_star else str(res.total_override or res.size)
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        if not res.no_length:
            self.send_header("Content-Length", str(length if status == 206 else (res.total_override or res.size)))
        else:
            self.send_header("Connection", "close")
        if res.encoding:
            self.send_header("Content-Encoding", res.encoding)
        for k, v in res.headers.items():
            self.send_header(k, v)
        if res.head_drip:
            self._headers_buffer.append(b"\r\n")
            self.drip_head(path, res.head_drip, res.head_drip_for)
            if self.close_connection:
                return
        else:
            self.end_headers()
        limit = length if res.body_cut is None else min(length, res.body_cut)
        pos = start
        try:
            if res.drip:
                for _ in range(limit):
                    time.sleep(res.drip)
                    self._write(path, res.read(pos, 1))
                    pos += 1
            else:
                began = time.perf_counter()
                while pos < start + limit:
                    n = min(1 << 16, start + limit - pos)
                    self._write(path, res.read(pos, n))
                    pos += n
                    if self.site.rate:  # pace to a link of this rate
                        ahead = (pos - start) / self.site.rate - (time.perf_counter() - began)
                        if ahead > 0:
                            time.sleep(ahead)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        if res.body_cut is not None or res.no_length:
            self.close_connection = True


@dataclass
class HubFile:
    path: str
    data: bytes | Resource
    lfs: bool = True

    @property
    def size(self) -> int:
        return len(self.data) if isinstance(self.data, bytes) else self.data.size

    def resource(self) -> Resource:
        return from_bytes(self.data) if isinstance(self.data, bytes) else self.data

    def sha256(self) -> str:
        if isinstance(self.data, bytes):
            return hashlib.sha256(self.data).hexdigest()
        return hashlib.sha256(self.path.encode()).hexdigest()  # a synthesized file's stand-in oid


class FakeHub:
    """Repos: repo id -> commit sha -> files; 'main' names the first commit."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.repos: dict[str, dict[str, list[HubFile]]] = {}
        self.refs: dict[tuple[str, str], str] = {}
        self.token: str | None = None  # when set, every route needs it
        self.required: tuple[str, str] | None = None  # (name, value): a private hub's header, on every route
        self.oid_override: dict[str, str] = {}  # path -> the sha256 the hub claims
        self.api_drip = 0.0  # sleep between 1-byte writes of the repo API's status line and headers
        self.api_drip_for = 15.0

    def add(self, repo: str, files: list[HubFile], *, sha: str = "a" * 40, ref: str = "main") -> None:
        self.repos.setdefault(repo, {})[sha] = files
        self.refs[(repo, ref)] = sha
        for f in files:
            if f.lfs:
                self.site.resources[f"/cdn/{self.oid(f)}"] = f.resource()

    def oid(self, f: HubFile) -> str:
        return self.oid_override.get(f.path, f.sha256())

    def _commit(self, repo: str, rev: str) -> str | None:
        if rev in self.repos.get(repo, {}):
            return rev
        return self.refs.get((repo, rev))

    def handle(self, h: Handler, path: str) -> bool:
        if self.required is not None and h.headers.get(self.required[0]) != self.required[1]:
            h._simple(403, b'{"error": "a private hub: the header is missing"}', {"Content-Type": "application/json"})
            return True
        authorised = self.token is None or h.headers.get("Authorization") == f"Bearer {self.token}"
        if not authorised and not path.startswith("/cdn/"):
            h._simple(401, b'{"error": "Invalid credentials"}', {"Content-Type": "application/json"})
            return True
        m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        if m:
            repo = m.group(2) if m.group(1) == "models" else f"datasets/{m.group(2)}"
            rev = urllib.parse.unquote(m.group(3) or "main")
            sha = self._commit(repo, rev)
            if sha is None:
                h._simple(
                    404,
                    b'{"error": "Repository not found"}',
                    {"Content-Type": "application/json", "X-Error-Code": "RepoNotFound"},
                )
                return True
            siblings = []
            for f in self.repos[repo][sha]:
                entry: dict[str, Any] = {"rfilename": f.path, "size": f.size, "blobId": "b" * 40}
                if f.lfs:
                    entry["lfs"] = {"sha256": self.oid(f), "size": f.size, "pointerSize": 134}
                siblings.append(entry)
            body = json.dumps({"id": m.group(2), "sha": sha, "siblings": siblings}).encode()
            if self.api_drip:
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", str(len(body)))
                h._headers_buffer.append(b"\r\n")
                h.drip_head(path, self.api_drip, self.api_drip_for)
                h._write(path, body)
                return True
            h._simple(200, body, {"Content-Type": "application/json"})
            return True
        m = re.fullmatch(r"/((?:datasets/)?[^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            repo, rev, file_path = m.group(1), urllib.parse.unquote(m.group(2)), urllib.parse.unquote(m.group(3))
            sha = self._commit(repo, rev)
            found = None if sha is None else next((f for f in self.repos[repo][sha] if f.path == file_path), None)
            if found is None:
                h._simple(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})
                return True
            if found.lfs:
                h.send_response(302)
                h.send_header("Location", f"/cdn/{self.oid(found)}")
                h.send_header("X-Linked-Etag", f'"{self.oid(found)}"')
                h.send_header("X-Linked-Size", str(found.size))
                h.send_header("X-Repo-Commit", sha or "")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return True
            h.serve(path, found.resource())
            return True
        return False


class Server:
    def __init__(self, site: Site | None = None) -> None:
        self.site = site or Site()
        handler = type("BoundHandler", (Handler,), {"site": self.site})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Server:  # noqa: PYI034 - not subclassed
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def hub(self) -> FakeHub:
        if self.site.hub is None:
            self.site.hub = FakeHub(self.site)
        return self.site.hub
