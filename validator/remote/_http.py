# Strategy: the only module that speaks HTTP: a client whose every request
# is bounded, and a response read only as far as asked.  (Reading one file
# by Range requests is _ranged's; the watch that bounds a request until its
# headers are in is _watch's.)  Every server is treated as hostile:
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

import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final
from urllib.parse import urljoin, urlsplit

import urllib3
from urllib3.exceptions import HTTPError as _Urllib3Error

from validator._errors import RemoteError
from validator.remote._watch import HTTPPool, HTTPSPool, Watch, watching

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from urllib3.response import BaseHTTPResponse

__all__ = ["CHUNK", "DIGITS", "MAX_REDIRECTS", "Client", "Options", "Response", "fetch_small"]

MAX_REDIRECTS: Final = 10
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
CHUNK: Final = 1 << 20  # the most one socket read asks for
DIGITS: Final = re.compile(r"\d{1,20}")  # a length in a header
_PRIVATE: Final = frozenset({"authorization", "proxy-authorization", "cookie"})


@dataclass(frozen=True)
class Options:
    """How remote reads behave: timeouts, deadline, bound on concurrency."""

    timeout: float = 30.0  # seconds per connect and per socket read
    deadline: float = 300.0  # seconds per request: connect, headers and body (see min_rate)
    concurrency: int = 16  # header fetches in flight at once
    min_rate: float = 64 << 10  # bytes a second: each received byte adds 1 / min_rate s to the deadline
    headers: Mapping[str, str] = field(default_factory=dict)  # the user's (--header): sent to the first origin only


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
        self.pool.pool_classes_by_scheme = {"http": HTTPPool, "https": HTTPSPool}
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
        watch = Watch(left)
        watching.watch = watch
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
            watching.watch = None
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
        if DIGITS.fullmatch(value.strip()) is None:
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
                chunk = self.raw.read1(min(CHUNK, n - got), decode_content=False)
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
