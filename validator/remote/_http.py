# Strategy: the only module that speaks HTTP.  A safetensors header sits at
# the front of the file, so a remote check needs the first 8 + N bytes and
# the file's total length, nothing else.  RemoteFile asks for the first
# FIRST_READ bytes with one Range request; the total comes from its
# Content-Range (206), its Content-Length (200) or the `*/total` of a 416.
# When the header is longer than that first piece, one more Range request
# fetches the rest: two requests per file at most, and never more than
# 8 + N + FIRST_READ bytes asked for.
#
# Every server is treated as hostile:
# - a 200 to a Range request (Range ignored) is read as a stream only as far
#   as needed, then the connection is closed: the body is never drained;
# - a 206 whose Content-Range does not start where asked, whose span or
#   total is malformed, or whose body is shorter than its span is refused;
# - the total must be the same in every response about one file, and so
#   must its ETag (X-Linked-Etag on the hub) when both responses state one;
# - redirects are followed here, not by urllib3, at most MAX_REDIRECTS hops,
#   http(s) only, a repeated URL is a loop, and the Authorization header is
#   dropped when a hop leaves the origin (the hub redirects to a CDN);
# - content codings are refused (we ask for identity; a gzip body would be
#   neither the file's bytes nor bounded);
# - each socket operation has a timeout (`timeout`), and each request a
#   deadline that covers all of it: connecting, the TLS handshake, sending,
#   every redirect hop, the status line and headers, and the body.  Until
#   the headers are in, a watch (a timer) shuts the request's socket down
#   the moment the deadline passes, so a server that drips its headers a
#   byte at a time, each inside the per-read timeout, is cut off on time;
#   the body is checked between reads (each read waits `timeout` at most),
#   and a body that keeps arriving earns time as it comes: a request fails
#   once more than `deadline + bytes received / min_rate` seconds have
#   passed, so a large download at any reasonable rate is never cut off,
#   while a drip below `min_rate` is.  Name resolution (getaddrinfo) cannot
#   be interrupted: it is bounded by the system's resolver.
# Failures raise RemoteError (a SourceError, so an OSError) naming the URL
# and the reason; the CLI turns them into exit code 2.
#
# The client is urllib3: maintained, without dependencies of its own, on every
# Python we support, with raw reads (no decoding), per-connect and per-read
# timeouts and a bounded, thread-safe connection pool.
from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin, urlsplit

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import HTTPError as _Urllib3Error

from validator._errors import RemoteError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from urllib3.response import BaseHTTPResponse

FIRST_READ: Final = 64 << 10  # bytes asked for by the first request of a file
MAX_REDIRECTS: Final = 10
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_CHUNK: Final = 1 << 20
# Content-Range: bytes first-last/total, or bytes */total (RFC 9110 14.4).
_CONTENT_RANGE: Final = re.compile(r"bytes (\d{1,20})-(\d{1,20})/(\d{1,20}|\*)")
_UNSATISFIED: Final = re.compile(r"bytes \*/(\d{1,20})")
_DIGITS: Final = re.compile(r"\d{1,20}")
_PRIVATE: Final = frozenset({"authorization", "proxy-authorization", "cookie"})


@dataclass(frozen=True)
class Options:
    """How remote reads behave: timeouts, deadline, bound on concurrency."""

    timeout: float = 30.0  # seconds per connect and per socket read
    deadline: float = 300.0  # seconds per request: connect, headers and body (see min_rate)
    concurrency: int = 16  # header fetches in flight at once
    min_rate: float = 64 << 10  # bytes a second: each received byte adds 1 / min_rate s to the deadline
    headers: Mapping[str, str] = field(default_factory=dict)  # the user's (--header): sent to the first origin only


class _Watch:
    """The sockets of one request until its headers are in; shut down (both
    ways, which wakes a read blocked on them) when the deadline passes."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if self.expired:
                _shut(sock)
            else:
                self._sockets.append(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, also for a TLS socket: it only wakes the
    # reader; the TLS state is left to the thread that owns it.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


_watching = threading.local()  # .watch: the _Watch of the request this thread is making


class _Watched(HTTPConnection):
    """A connection that hands its socket to the current request's watch:
    when it is made (before any TLS handshake), and when it is reused."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        watch = getattr(_watching, "watch", None)
        if watch is not None:
            watch.add(sock)
        return sock

    def request(self, *args: object, **kwargs: object) -> None:
        watch = getattr(_watching, "watch", None)
        if watch is not None and self.sock is not None:
            watch.add(self.sock)
        super().request(*args, **kwargs)  # type: ignore[arg-type]


class _WatchedHTTPS(_Watched, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _Watched


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPS


class Client:
    """A pool of connections shared by every request of one command."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self.pool = urllib3.PoolManager(
            num_pools=32,
            maxsize=max(1, self.options.concurrency),
            block=True,
            retries=False,
            timeout=urllib3.Timeout(connect=self.options.timeout, read=self.options.timeout),
        )
        self.pool.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
        self._lock = threading.Lock()
        self.requests = 0

    def close(self) -> None:
        self.pool.clear()

    def __enter__(self) -> Client:  # noqa: PYI034 - not meant to be subclassed
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(
        self,
        url: str,
        *,
        start: int = 0,
        end: int | None = None,
        ranged: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        """GET ``url`` (bytes ``start``..``end`` inclusive, or to the end),
        following redirects; the body is left unread."""
        headers = {"Accept-Encoding": "identity", **self.options.headers, **(headers or {})}
        if ranged:
            headers["Range"] = f"bytes={start}-" + ("" if end is None else str(end))
        seen = {url}
        hops: list[Mapping[str, str]] = []
        here = url
        origin = _origin(url)
        deadline = time.monotonic() + self.options.deadline  # one deadline for every hop and the body
        for _ in range(MAX_REDIRECTS + 1):
            if urlsplit(here).scheme not in {"http", "https"}:
                raise RemoteError(f"{url}: redirected to {here!r}, which is not an http(s) URL")
            with self._lock:
                self.requests += 1
            raw = self._request(url, here, headers, deadline)
            if raw.status not in _REDIRECTS:
                return Response(
                    url,
                    here,
                    raw=raw,
                    hops=hops,
                    deadline=deadline,
                    timeout=self.options.timeout,
                    min_rate=self.options.min_rate,
                )
            location = raw.headers.get("Location")
            hops.append(dict(raw.headers))
            raw.close()  # a redirect's body is never read
            raw.release_conn()
            if not location:
                raise RemoteError(f"{url}: HTTP {raw.status} redirect without a Location")
            here = urljoin(here, location)
            if here in seen:
                raise RemoteError(f"{url}: redirect loop at {here}")
            seen.add(here)
            if _origin(here) != origin:
                # Credentials stay with the origin they were given for: the
                # user's own headers (--header) and any authorisation.
                private = _PRIVATE | {k.lower() for k in self.options.headers}
                headers = {k: v for k, v in headers.items() if k.lower() not in private}
        raise RemoteError(f"{url}: more than {MAX_REDIRECTS} redirects")

    def _request(self, url: str, here: str, headers: Mapping[str, str], deadline: float) -> BaseHTTPResponse:
        """One GET of ``here``, its status line and headers read, under the watch."""
        left = deadline - time.monotonic()
        late = RemoteError(
            f"{url}: no answer within the deadline of {self.options.deadline:g} s (connection, status line and headers)"
        )
        if left <= 0:
            raise late
        watch = _Watch(left)
        _watching.watch = watch
        try:
            raw = self.pool.request(
                "GET",
                here,
                headers=headers,
                preload_content=False,
                redirect=False,
                decode_content=False,
                pool_timeout=left,  # waiting for a free connection counts too
            )
        except (_Urllib3Error, OSError) as exc:
            if watch.expired or time.monotonic() >= deadline:
                raise late from exc
            raise RemoteError(f"{url}: {_reason(exc, self.options.timeout)}") from exc
        finally:
            _watching.watch = None
            watch.cancel()
        if watch.expired:  # at the last moment: its socket may be shut down already
            raw.close()
            raw.release_conn()
            raise late
        return raw


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme, parts.hostname, port


def _reason(exc: BaseException, timeout: float) -> str:
    text = str(exc)
    # NewConnectionError subclasses ConnectTimeoutError in urllib3: a refused
    # or unresolvable connection is not a timeout, so it is asked first.
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return f"cannot connect: {text.split(': ', 1)[-1]}"
    if _handshake_timed_out(exc):
        # CPython bounds a whole TLS handshake by the socket timeout.
        return f"the TLS handshake did not finish within {timeout:g} s"
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError) or "connect timeout" in text.lower():
        return f"no connection within {timeout:g} s (connect timeout)"
    if isinstance(exc, (urllib3.exceptions.ReadTimeoutError, TimeoutError)) or "timed out" in text.lower():
        return f"server sent nothing for {timeout:g} s (read timeout)"
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return f"connection broken: {text}"
    return text or type(exc).__name__


def _handshake_timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` (urllib3 reports it as a read timeout) or what it
    wraps is a TLS handshake that timed out."""
    seen: BaseException | None = exc
    for _ in range(8):  # a short chain: urllib3 wraps once or twice
        if seen is None:
            return False
        text = str(seen).lower()
        if "handshake" in text and "timed out" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Response:
    """One final (non-redirect) response, read at most as far as asked."""

    def __init__(
        self,
        url: str,
        final_url: str,
        *,
        raw: BaseHTTPResponse,
        hops: list[Mapping[str, str]],
        deadline: float,
        timeout: float,
        min_rate: float = Options.min_rate,
    ) -> None:
        self.url = url
        self.final_url = final_url
        self.raw = raw
        self.hops = hops
        self.status = raw.status
        self.deadline = deadline  # time.monotonic() by which the request was to be done...
        self.min_rate = min_rate  # ...plus a second per min_rate bytes received
        self.received = 0
        self.timeout = timeout
        self.done = False  # the body was read to its end
        self._closed = False

    def header(self, name: str) -> str | None:
        """A header of this response, else of the latest redirect hop carrying it."""
        value = self.raw.headers.get(name)
        if value is not None:
            return str(value)
        for hop in reversed(self.hops):
            for key, hop_value in hop.items():
                if key.lower() == name.lower():
                    return hop_value
        return None

    def check_ok(self) -> None:
        """Raise RemoteError for an error status or a content coding."""
        if self.status >= 400 and self.status != 416:
            reason = self.raw.reason or ""
            self.close()
            raise RemoteError(f"{self.url}: HTTP {self.status} {reason}".rstrip(), status=self.status)
        coding = (self.raw.headers.get("Content-Encoding") or "identity").strip().lower()
        if coding != "identity":
            self.close()
            raise RemoteError(f"{self.url}: the server sent a {coding!r}-encoded body; only identity is accepted")

    def content_length(self) -> int | None:
        value = self.raw.headers.get("Content-Length")
        if value is None:
            return None
        if _DIGITS.fullmatch(value.strip()) is None:
            self.close()
            raise RemoteError(f"{self.url}: malformed Content-Length {value[:40]!r}")
        return int(value)

    def read(self, n: int, sink: Callable[[bytes], None] | None = None) -> bytes:
        """Exactly ``n`` bytes of the body (fewer only at its end)."""
        parts: list[bytes] = []
        got = 0
        while got < n:
            if time.monotonic() > self.deadline + self.received / self.min_rate:
                self.close()
                raise RemoteError(f"{self.url}: the transfer did not finish in time (deadline exceeded)")
            try:
                # read1: one socket read at most, so the deadline is checked between arrivals.
                chunk = self.raw.read1(min(_CHUNK, n - got), decode_content=False)
            except (_Urllib3Error, OSError) as exc:
                self.close()
                raise RemoteError(f"{self.url}: {_reason(exc, self.timeout)}") from exc
            if not chunk:
                self.done = True
                break
            got += len(chunk)
            self.received += len(chunk)
            if sink is None:
                parts.append(chunk)
            else:
                sink(chunk)
        return b"".join(parts)

    def close(self) -> None:
        """Release a fully read connection; close one with an unread body,
        which is never drained."""
        if self._closed:
            return
        self._closed = True
        if not self.done:
            self.raw.close()  # the socket goes; the pool slot is handed back below
        self.raw.release_conn()


class RemoteFile:
    """Random reads of one remote file, through at most a few Range requests.

    ``open`` issues the first request; ``size`` is then the file's length.
    ``read(start, n)`` serves bytes from what the first response holds, from
    its still-open stream (a server that ignored Range), or with one more
    Range request.
    """

    def __init__(
        self, client: Client, url: str, *, first: int = FIRST_READ, headers: Mapping[str, str] | None = None
    ) -> None:
        self.client = client
        self.url = url
        self.headers = headers
        self.first = first
        self.size = -1
        self.etag: str | None = None
        self.linked_etag: str | None = None  # the hub's X-Linked-Etag: an LFS file's sha256
        self.linked_size: int | None = None
        self.commit: str | None = None
        self.version: str | None = None  # the first response's X-Linked-Etag or ETag, as sent
        self.final_url = url
        self._have = b""  # bytes 0..len(_have) of the file
        self._stream: Response | None = None  # positioned at len(_have), ends at _stream_end
        self._stream_end = 0
        self.requests = 0

    def __enter__(self) -> RemoteFile:  # noqa: PYI034 - not meant to be subclassed
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def open(self) -> None:
        resp = self._request(0, self.first - 1)
        self.final_url = resp.final_url
        linked = resp.header("X-Linked-Etag")
        etag = linked or resp.header("ETag")
        self.version = etag
        self.etag = None if etag is None else etag.strip().removeprefix("W/").strip('"')
        self.linked_etag = self.etag if linked else None
        linked_size = resp.header("X-Linked-Size")
        self.linked_size = (
            int(linked_size) if linked_size is not None and _DIGITS.fullmatch(linked_size.strip()) else None
        )
        self.commit = resp.header("X-Repo-Commit")
        # A server may answer a shorter range than asked: take what it spans.
        self._take(resp, min(self.first, self._stream_end))

    def _request(self, start: int, end: int) -> Response:  # noqa: C901 - one branch per HTTP outcome (retry, redirect, range, error)
        """One Range request; sets or checks ``size``; returns the response
        positioned at ``start`` with ``_stream_end`` set."""
        resp = self.client.get(self.url, start=start, end=end, headers=self.headers)
        self.requests += 1
        resp.check_ok()
        self._same_version(resp)
        if resp.status == 416:
            unsatisfied = self._unsatisfied(resp)
            self._set_size(resp, unsatisfied)
            resp.close()
            if start < unsatisfied:
                raise RemoteError(f"{self.url}: HTTP 416 for bytes {start}-{end} of a {unsatisfied}-byte file")
            self._stream_end = start
            return resp
        if resp.status == 206:
            first, last, total = self._content_range(resp)
            if first != start or (total is not None and last >= total):
                resp.close()
                raise RemoteError(
                    f"{self.url}: asked for bytes {start}-{end}, the server answered bytes {first}-{last}"
                    + ("" if total is None else f" of {total}")
                )
            length = resp.content_length()
            if length is not None and length != last - first + 1:
                resp.close()
                raise RemoteError(
                    f"{self.url}: Content-Length {length} does not match Content-Range bytes {first}-{last}"
                )
            if total is None:
                resp.close()
                raise RemoteError(f"{self.url}: the server does not state the file's length (Content-Range */*)")
            self._set_size(resp, total)
            self._stream_end = last + 1
            return resp
        if resp.status == 200:
            length = resp.content_length()
            if length is None:
                resp.close()
                raise RemoteError(
                    f"{self.url}: the server ignored the Range request and gives no Content-Length; "
                    "refusing to download the whole file to learn its length"
                )
            self._set_size(resp, length)
            if start:
                # The whole body again: skip to `start` only if it is near.
                if start > len(self._have) + _CHUNK:
                    resp.close()
                    raise RemoteError(f"{self.url}: the server ignores Range requests; refusing to skip {start} bytes")
                if resp.read(start) != self._have[:start]:
                    resp.close()
                    raise RemoteError(f"{self.url}: the file changed between requests")
            self._stream_end = length
            return resp
        resp.close()
        raise RemoteError(f"{self.url}: unexpected HTTP {resp.status} to a Range request")

    def _same_version(self, resp: Response) -> None:
        """Refuse a later response whose ETag is not the first one's."""
        if self.version is None:
            return
        now = resp.header("X-Linked-Etag") or resp.header("ETag")
        if now is not None and now != self.version:
            resp.close()
            raise RemoteError(
                f"{self.url}: the file changed between requests (ETag {self.version[:80]} then {now[:80]})"
            )

    def _unsatisfied(self, resp: Response) -> int:
        value = resp.raw.headers.get("Content-Range") or ""
        match = _UNSATISFIED.fullmatch(value.strip())
        if match is None:
            resp.close()
            raise RemoteError(f"{self.url}: HTTP 416 without a Content-Range total")
        return int(match.group(1))

    def _content_range(self, resp: Response) -> tuple[int, int, int | None]:
        value = resp.raw.headers.get("Content-Range")
        match = None if value is None else _CONTENT_RANGE.fullmatch(value.strip())
        if match is None:
            resp.close()
            shown = "none" if value is None else repr(value[:80])
            raise RemoteError(f"{self.url}: HTTP 206 with a malformed Content-Range ({shown})")
        first, last = int(match.group(1)), int(match.group(2))
        total = None if match.group(3) == "*" else int(match.group(3))
        if last < first:
            resp.close()
            raise RemoteError(f"{self.url}: HTTP 206 with a reversed Content-Range {value!r}")
        return first, last, total

    def _set_size(self, resp: Response, total: int) -> None:
        if self.size >= 0 and total != self.size:
            resp.close()
            raise RemoteError(f"{self.url}: the file's length changed between requests ({self.size} then {total})")
        self.size = total

    def _take(self, resp: Response, want: int) -> None:
        """Read the next ``want`` bytes of ``resp`` into _have; keep it open
        when more of its body remains."""
        data = resp.read(want)
        if len(data) < want:
            resp.close()
            raise RemoteError(
                f"{self.url}: short read: the server sent {len(self._have) + len(data)} of the "
                f"{len(self._have) + want} bytes it promised"
            )
        self._have += data
        if len(self._have) >= self._stream_end:
            resp.done = True
            resp.close()
            self._stream = None
        else:
            self._stream = resp

    def read(self, start: int, n: int) -> bytes:
        """Bytes ``start``..``start + n`` of the file (n is clipped to its end)."""
        stop = min(start + n, self.size)
        if stop <= len(self._have):
            return self._have[start:stop]
        if self._stream is not None and stop <= self._stream_end:
            self._take(self._stream, stop - len(self._have))
            return self._have[start:stop]
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        resp = self._request(len(self._have), stop - 1)
        self._take(resp, stop - len(self._have))
        return self._have[start:stop]

    def held(self) -> bytes:
        """Every byte read so far, from offset 0."""
        return self._have

    def stream_rest(self, sink: Callable[[bytes], None]) -> int:
        """Feed ``sink`` every byte from len(held()) to the end; return the count."""
        start = len(self._have)
        if start >= self.size:
            return 0
        resp = self._stream
        self._stream = None
        if resp is None:
            resp = self._request(start, self.size - 1)
        want = self.size - start
        got = 0

        def count(chunk: bytes) -> None:
            nonlocal got
            got += len(chunk)
            sink(chunk)

        resp.read(want, count)
        resp.close()
        if got != want:
            raise RemoteError(f"{self.url}: short read: the server sent {start + got} of {self.size} bytes")
        return got


def fetch_small(
    client: Client, url: str, limit: int, headers: Mapping[str, str] | None = None
) -> tuple[bytes | None, int]:
    """The whole body of a small file (an index), refused unread past ``limit``:
    (its bytes, or None when it is larger than ``limit``; its size)."""
    resp = client.get(url, ranged=False, headers=headers)
    resp.check_ok()
    if resp.status != 200:
        resp.close()
        raise RemoteError(f"{url}: unexpected HTTP {resp.status}")
    length = resp.content_length()
    if length is not None and length > limit:
        resp.close()
        return None, length
    data = resp.read(limit + 1)
    if length is not None and len(data) != length:
        resp.close()
        raise RemoteError(f"{url}: short read: the server sent {len(data)} of {length} bytes")
    if len(data) > limit:
        resp.close()
        return None, len(data)
    resp.done = True
    resp.close()
    return data, len(data)
