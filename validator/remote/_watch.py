# Strategy: the deadline of a request until its headers are in.  urllib3
# bounds each socket operation by a timeout, but a server that drips its
# status line and headers a byte at a time, each inside that timeout, would
# hold a request forever.  A Watch is a timer over the sockets of one
# request: every connection the pools below make or reuse hands its socket
# to the watch of the request the current thread is making (`watching`),
# and when the deadline passes the watch shuts them down both ways, which
# wakes a read blocked on them.  The body's deadline is checked between
# reads by _http.Response instead.
from __future__ import annotations

import contextlib
import socket
import threading

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["HTTPPool", "HTTPSPool", "Watch", "watching"]


class Watch:
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


watching = threading.local()  # .watch: the Watch of the request this thread is making


class _Watched(HTTPConnection):
    """A connection that hands its socket to the current request's watch:
    when it is made (before any TLS handshake), and when it is reused."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        watch = getattr(watching, "watch", None)
        if watch is not None:
            watch.add(sock)
        return sock

    def request(self, *args: object, **kwargs: object) -> None:
        watch = getattr(watching, "watch", None)
        if watch is not None and self.sock is not None:
            watch.add(self.sock)
        super().request(*args, **kwargs)  # type: ignore[arg-type]


class _WatchedHTTPS(_Watched, HTTPSConnection):
    pass


class HTTPPool(HTTPConnectionPool):
    ConnectionCls = _Watched


class HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPS
