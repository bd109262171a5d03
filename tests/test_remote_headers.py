# Strategy: -H/--header for a private server.  A server on 127.0.0.1 answers
# 401 without the header; a second server (another origin) is where the first
# redirects, and must never see the user's header or any credentials.
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("urllib3")

import validator
from tests.remote_servers import Server, from_bytes
from tests.test_remote import hub, server  # noqa: F401 - fixtures: a local server and a fake hub on it
from validator.cli.main import main

TOKEN = {"X-Api-Key": "s3cret", "Authorization": "Bearer t0ken"}


@pytest.fixture
def valid_bytes(tmp_path):
    validator.save({"w": np.arange(6, dtype=np.float32)}, tmp_path / "m.safetensors")
    return (tmp_path / "m.safetensors").read_bytes()


def _argv(*headers: str) -> list[str]:
    return [part for h in headers for part in ("-H", h)]


def test_check_sends_the_headers_a_private_server_needs(valid_bytes, capsys):
    with Server() as s:
        s.site.resources["/m.safetensors"] = from_bytes(valid_bytes, requires=TOKEN)
        url = f"{s.url}/m.safetensors"
        assert main(["check", url]) == 2  # without them: HTTP 401, one line
        assert "401" in capsys.readouterr().err
        rc = main(["check", *_argv("X-Api-Key: s3cret", "Authorization: Bearer t0ken"), url])
    assert rc == 0, capsys.readouterr()


def test_download_sends_them_too(valid_bytes, tmp_path, capsys):
    with Server() as s:
        s.site.resources["/m.safetensors"] = from_bytes(valid_bytes, requires=TOKEN)
        rc = main(
            [
                "download",
                *_argv("X-Api-Key: s3cret", "Authorization: Bearer t0ken"),
                "-d",
                str(tmp_path / "out"),
                "--progress",
                "never",
                f"{s.url}/m.safetensors",
            ]
        )
    assert rc == 0, capsys.readouterr()
    assert (tmp_path / "out" / "m.safetensors").read_bytes() == valid_bytes


def test_a_redirect_to_another_origin_drops_the_users_headers(valid_bytes, capsys):
    with Server() as origin, Server() as other:
        other.site.resources["/blob"] = from_bytes(valid_bytes)
        origin.site.redirects["/m.safetensors"] = (302, f"{other.url}/blob", {})
        rc = main(
            [
                "check",
                *_argv("X-Api-Key: s3cret", "Authorization: Bearer t0ken", "Cookie: a=b"),
                f"{origin.url}/m.safetensors",
            ]
        )
        assert rc == 0, capsys.readouterr()
        sent_to_origin = origin.site.request_headers[0][1]
        assert sent_to_origin["X-Api-Key"] == "s3cret"
        assert sent_to_origin["Authorization"] == "Bearer t0ken"
        seen_elsewhere = {k.lower() for _, headers in other.site.request_headers for k in headers}
    assert seen_elsewhere
    assert not seen_elsewhere & {"x-api-key", "authorization", "cookie"}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("no colon here", "expected 'NAME: VALUE'"),
        ("Bad Name: x", "expected 'NAME: VALUE'"),
        ("Range: bytes=0-", "Range is set by stcheck itself"),
        ("X-Api-Key: a\rInjected: b", "holds a line break or NUL"),
    ],
)
def test_a_malformed_header_is_a_usage_error_with_its_reason(value, reason, capsys):
    assert main(["check", "-H", value, "http://127.0.0.1:9/m.safetensors"]) == 2
    err = capsys.readouterr().err
    assert reason in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["check", "scan", "inspect", "download"])
def test_the_hf_listing_sends_them_too(command, valid_bytes, tmp_path, hub, capsys):  # noqa: F811 - hub is a fixture
    # A private hub answers 403 to any request without its header, the
    # repository listing (huggingface_hub's HTTP stack) included.
    from tests.remote_servers import HubFile

    hub.required = ("X-Api-Key", "s3cret")
    hub.add("org/model", [HubFile("model.safetensors", valid_bytes), HubFile("config.json", b"{}", lfs=False)])
    extra = ["-d", str(tmp_path / "out"), "--progress", "never"] if command == "download" else []
    argv = [command, *extra, "hf://org/model"]
    if command in {"check", "scan"}:
        argv.insert(1, "--no-config")
    assert main(argv) == 2  # without it: refused, one line
    assert "403" in capsys.readouterr().err
    rc = main([argv[0], *_argv("X-Api-Key: s3cret"), *argv[1:]])
    assert rc == 0, capsys.readouterr()
