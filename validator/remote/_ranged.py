# Strategy: random reads of one remote file by Range requests.  A
# safetensors header sits at the front of the file, so a remote check needs
# the first 8 + N bytes and the file's total length, nothing else.
# RemoteFile asks for the first FIRST_READ bytes with one Range request; the
# total comes from its Content-Range (206), its Content-Length (200) or the
# `*/total` of a 416.  When the header is longer than that first piece, one
# more Range request fetches the rest: two requests per file at most, and
# never more than 8 + N + FIRST_READ bytes asked for.  Every answer is
# hostile until checked:
# - a 200 to a Range request (Range ignored) is read as a stream only as far
#   as needed, then the connection is closed: the body is never drained;
# - a 206 whose Content-Range does not start where asked, whose span or
#   total is malformed, or whose body is shorter than its span is refused;
# - the total must be the same in every response about one file, and so
#   must its ETag (X-Linked-Etag on the hub) when both responses state one.
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from validator._errors import RemoteError
from validator.remote._http import CHUNK, DIGITS

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from validator.remote._http import Client, Response

__all__ = ["FIRST_READ", "RemoteFile"]

FIRST_READ: Final = 64 << 10  # bytes asked for by the first request of a file
# Content-Range: bytes first-last/total, or bytes */total (RFC 9110 14.4).
_CONTENT_RANGE: Final = re.compile(r"bytes (\d{1,20})-(\d{1,20})/(\d{1,20}|\*)")
_UNSATISFIED: Final = re.compile(r"bytes \*/(\d{1,20})")


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
            int(linked_size) if linked_size is not None and DIGITS.fullmatch(linked_size.strip()) else None
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
                if start > len(self._have) + CHUNK:
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
