# Strategy: the network deadline (issue 21, item 5).  A request must finish
# within its deadline whatever the server does between its bytes: a status
# line and headers dripped a byte at a time (each byte inside the per-read
# timeout), a TLS handshake dripped the same way, a chain of slow redirects,
# and the hub's API answering through huggingface_hub.  Every server here is
# on 127.0.0.1, bounded in time, and stops by itself.  A long body that keeps
# arriving is not cut off: the deadline grows with the bytes received.
from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("urllib3")

from tests.remote_servers import Server, from_bytes
from tests.test_remote import hub, hub_checkpoint, st_bytes  # noqa: F401 - hub is a fixture
from validator.remote import Options, RemoteError, download, validate_url

# The per-read timeout the drips stay under, and the deadline they must hit.
DRIPPED = Options(timeout=1.0, deadline=3.0, concurrency=2)
SLACK = 3.0  # a loaded machine's scheduling, on top of the deadline


@pytest.fixture
def server():
    with Server() as s:
        yield s


@pytest.fixture
def valid_bytes(tmp_path):
    return st_bytes({"a": np.arange(8, dtype=np.float32)}, tmp_path)


def timed_error(fn) -> tuple[float, str]:
    started = time.monotonic()
    with pytest.raises(RemoteError) as info:
        fn()
    return time.monotonic() - started, str(info.value)


def test_dripped_headers_hit_the_deadline(server, valid_bytes):
    server.site.resources["/m.safetensors"] = from_bytes(valid_bytes, head_drip=0.2, head_drip_for=20.0)
    took, message = timed_error(lambda: validate_url(server.url + "/m.safetensors", options=DRIPPED))
    assert took < DRIPPED.deadline + SLACK
    assert message == (
        f"{server.url}/m.safetensors: no answer within the deadline of 3 s (connection, status line and headers)"
    )


def test_slow_redirect_hops_share_one_deadline(server, valid_bytes):
    server.site.resources["/m.safetensors"] = from_bytes(valid_bytes)
    for k in range(8):
        server.site.redirects[f"/r{k}"] = (302, f"/r{k + 1}" if k < 7 else "/m.safetensors", {})
    server.site.latency = 0.8  # every hop answers within the read timeout
    took, message = timed_error(lambda: validate_url(server.url + "/r0", options=DRIPPED))
    assert took < DRIPPED.deadline + SLACK
    assert "no answer within the deadline of 3 s" in message


class _DrippingTls:
    """A TCP server on 127.0.0.1 that answers a TLS ClientHello with the
    start of a ServerHello record, a byte every 0.2 s, for at most 20 s."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)

    def serve(self) -> None:
        until = time.monotonic() + 20
        while not self.stop.is_set() and time.monotonic() < until:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                record = b"\x16\x03\x03\x40\x00" + b"\x02" * 0x4000  # a handshake record of 16 KiB
                for byte in record:
                    if self.stop.is_set() or time.monotonic() > until:
                        break
                    try:
                        conn.sendall(bytes([byte]))
                    except OSError:
                        break
                    time.sleep(0.2)

    def __enter__(self) -> _DrippingTls:  # noqa: PYI034 - not subclassed
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def test_a_dripped_tls_handshake_is_cut_off():
    # CPython bounds the whole handshake by the socket timeout (1 s here),
    # which comes before the deadline; the watch would cut it off at 3 s.
    with _DrippingTls() as tls:
        url = f"https://127.0.0.1:{tls.port}/m.safetensors"
        took, message = timed_error(lambda: validate_url(url, options=DRIPPED))
    assert took < DRIPPED.timeout + SLACK
    assert message == f"{url}: the TLS handshake did not finish within 1 s"


def test_a_dripping_hub_api_hits_the_deadline(hub, server, tmp_path):  # noqa: F811 - hub is the fixture imported above
    hub_checkpoint(hub, tmp_path)
    hub.api_drip = 0.2
    hub.api_drip_for = 20.0
    took, message = timed_error(lambda: validate_url("hf://org/model/extra/lone.safetensors", options=DRIPPED))
    assert took < DRIPPED.deadline + SLACK
    assert message == "hf://org/model@main/extra/lone.safetensors: the hub did not answer within the deadline of 3 s"


def test_a_long_body_that_keeps_arriving_is_not_cut_off(server, tmp_path):
    # 2 MB at 1 MB/s takes about 2 s, past a 1 s deadline: a download that
    # makes progress goes on (the deadline grows with the bytes received).
    data = st_bytes({"w": np.arange(500_000, dtype=np.float32)}, tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data)
    server.site.rate = 1_000_000
    started = time.monotonic()
    done = download(server.url + "/m.safetensors", str(tmp_path / "out"), options=Options(timeout=5.0, deadline=1.0))
    assert time.monotonic() - started > 1.0
    assert (tmp_path / "out" / "m.safetensors").read_bytes() == data
    assert done[0].size == len(data)


def test_a_body_dripped_below_the_minimum_rate_hits_the_deadline(server, tmp_path):
    data = st_bytes({"w": np.arange(64, dtype=np.float32)}, tmp_path)
    server.site.resources["/m.safetensors"] = from_bytes(data, drip=0.05)
    took, message = timed_error(
        lambda: download(
            server.url + "/m.safetensors", str(tmp_path / "out"), options=Options(timeout=1.0, deadline=1.0)
        )
    )
    assert took < 1.0 + SLACK
    assert "did not finish in time" in message
