# Strategy: a remote source (http(s)://, hf://) is checked from its header,
# by range requests, exactly as standard input is read from its header
# only; so `--deep`, `--sha256` and `--checksums` on one are refused with
# one line and exit 2, never silently skipped (the bug: `scan --deep URL`
# passed with no deep check, `scan --sha256 HEX URL` said "0 files were
# found").  Each case runs against a local server that counts requests, to
# show that the refusal comes before anything is fetched, and through both
# the command and `validator.vet`.
from __future__ import annotations

import pytest

pytest.importorskip("urllib3")

import validator
from tests.remote_servers import HubFile, from_bytes
from tests.scan_fixtures import clean_file, sha256
from tests.test_remote import hub, server  # noqa: F401 - fixtures: a local server and a fake hub on it
from validator.cli.main import main
from validator.pipeline.vet import VetError


def _refusal(source: str, deep: str = "--deep") -> str:
    """The refusal as the command words it; the library names its field (``deep``)."""
    return (
        f"{source}: a remote source is checked from its header only (by range requests): "
        f"{deep} and digests need a file; stcheck download reads it whole"
    )


def _cases(url: str, checksums: str) -> list[tuple[list[str], validator.VetOptions]]:
    digest = sha256(clean_file())
    return [
        (["--deep", url], validator.VetOptions(deep=True, no_config=True)),
        (["--sha256", digest, url], validator.VetOptions(sha256=digest, no_config=True)),
        (["--checksums", checksums, url], validator.VetOptions(checksums=checksums, no_config=True)),
    ]


@pytest.mark.parametrize("which", ["deep", "sha256", "checksums"])
def test_a_url_refuses_deep_and_digests_before_any_request(server, tmp_path, capsys, which):  # noqa: F811
    url = server.url + "/ok.safetensors"
    server.site.resources["/ok.safetensors"] = from_bytes(clean_file())
    listed = tmp_path / "SHA256SUMS"
    listed.write_text(f"{sha256(clean_file())}  ok.safetensors\n")
    argv, options = _cases(url, str(listed))[["deep", "sha256", "checksums"].index(which)]
    code = main(["scan", "--no-config", *argv])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"stcheck scan: {_refusal(url)}\n")
    with pytest.raises(VetError) as caught:
        validator.vet([url], options)
    assert str(caught.value) == _refusal(url, deep="deep")
    assert server.site.log == []  # refused before anything was fetched


def test_an_hf_address_refuses_deep(hub, capsys):  # noqa: F811 - hub is a fixture
    hub.add("org/model", [HubFile("model.safetensors", clean_file())], sha="c" * 40)
    source = "hf://org/model/model.safetensors"
    code = main(["scan", "--no-config", "--deep", source])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"stcheck scan: {_refusal(source)}\n")
    with pytest.raises(VetError, match="checked from its header only"):
        validator.vet([source], validator.VetOptions(deep=True, no_config=True))
    assert hub.site.log == []  # not even the listing was asked for


def test_a_url_without_those_flags_is_still_checked(server, capsys):  # noqa: F811 - server is a fixture
    url = server.url + "/ok.safetensors"
    server.site.resources["/ok.safetensors"] = from_bytes(clean_file())
    assert main(["scan", "--no-config", url]) == 0
    assert "1 file" in capsys.readouterr().out
