# The verdict a user acts on (issue 20) and two library habits (issue 24):
# an unreadable path raises the errno's own OSError subclass, as open()
# does; a finding of a path-validated report prints that path.  Each test
# here was seen failing before its fix.
from __future__ import annotations

import errno
import os
import pickle
from typing import TYPE_CHECKING

import pytest

import validator
from validator._errors import SourceError, StcheckError

if TYPE_CHECKING:
    from pathlib import Path

VALID = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      "


# --- validate(missing) raises what `except FileNotFoundError` catches ---------


def test_missing_file_is_a_file_not_found_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.safetensors"
    with pytest.raises(FileNotFoundError) as caught:
        validator.validate(missing)
    exc = caught.value
    assert isinstance(exc, SourceError)
    assert isinstance(exc, StcheckError)
    assert exc.errno == errno.ENOENT
    assert exc.filename == str(missing)
    assert str(exc) == f"{missing}: No such file or directory"


def test_directory_is_an_is_a_directory_error(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as caught:
        validator.validate(tmp_path)
    assert isinstance(caught.value, SourceError)
    assert caught.value.errno == errno.EISDIR
    assert str(caught.value) == f"{tmp_path}: not a regular file"


def test_path_through_a_file_is_a_not_a_directory_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(VALID)
    with pytest.raises(NotADirectoryError) as caught:
        validator.validate(tmp_path / "f" / "x.safetensors")
    assert isinstance(caught.value, SourceError)
    assert caught.value.errno == errno.ENOTDIR


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (errno.ENOENT, FileNotFoundError),
        (errno.EACCES, PermissionError),
        (errno.EPERM, PermissionError),
        (errno.EISDIR, IsADirectoryError),
        (errno.ENOTDIR, NotADirectoryError),
        (errno.ETIMEDOUT, TimeoutError),
        (errno.EINTR, InterruptedError),
    ],
)
def test_each_errno_raises_its_own_subclass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, kind: type[OSError]
) -> None:
    # Root reads every file, so a permission error is made by the open itself.
    path = tmp_path / "f.safetensors"
    path.write_bytes(VALID)

    def refuse(*_args: object, **_kwargs: object) -> int:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(kind) as caught:
        validator.validate(path)
    exc = caught.value
    assert isinstance(exc, SourceError)
    assert type(exc) is not kind  # stcheck's own class, also the builtin one
    assert exc.errno == code
    assert str(exc) == f"{path}: {os.strerror(code)}"


def test_other_errno_stays_a_plain_source_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.safetensors"

    def refuse(*_args: object, **_kwargs: object) -> int:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(SourceError) as caught:
        validator.validate(path)
    assert type(caught.value) is SourceError
    assert caught.value.errno == errno.EIO


def test_errno_errors_pickle_as_themselves(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        validator.validate(tmp_path / "nope")
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is type(caught.value)
    assert str(again) == str(caught.value)


def test_fifo_stays_a_plain_source_error(tmp_path: Path) -> None:
    fifo = tmp_path / "f.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(SourceError) as caught:
        validator.validate(fifo)
    assert type(caught.value) is SourceError
    assert "not a regular file" in str(caught.value)


# --- str(finding) of a path-validated report shows the path -------------------

UNALIGNED = b"\x02\x00\x00\x00\x00\x00\x00\x00{}"  # one warning: ST104 at offset 0


def test_str_of_a_finding_shows_the_reports_path(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(UNALIGNED)
    (finding,) = validator.validate(path).findings
    assert str(finding).startswith(f"{path}:0: ST104 header-unaligned ")
    assert finding.path == str(path)
    assert finding.format() == str(finding)
    assert finding.format("other.safetensors").startswith("other.safetensors:0: ST104 ")  # an explicit path wins


def test_str_of_an_index_finding_shows_the_index_path(tmp_path: Path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"weight_map": {"a": "model-00001-of-00001.safetensors"}}')
    finding = validator.validate_index(index).findings[0]
    assert finding.path == str(index)
    assert str(finding).startswith(f"{index}: ST503 index-shard-missing ")


def test_a_finding_of_bytes_still_says_bytes() -> None:
    (finding,) = validator.validate(UNALIGNED).findings
    assert finding.path is None
    assert str(finding).startswith("<bytes>:0: ST104 header-unaligned ")


def test_findings_compare_equal_whatever_file_they_came_from(tmp_path: Path) -> None:
    path = tmp_path / "a.safetensors"
    path.write_bytes(UNALIGNED)
    assert validator.validate(path).findings == validator.validate(UNALIGNED).findings
    assert hash(validator.validate(path).findings[0]) == hash(validator.validate(UNALIGNED).findings[0])


def test_a_finding_of_an_open_file_shows_its_name(tmp_path: Path) -> None:
    path = tmp_path / "a.safetensors"
    path.write_bytes(UNALIGNED)
    with path.open("rb") as fh:
        (finding,) = validator.validate(fh).findings
    assert str(finding).startswith(f"{path}:0: ST104 ")


# --- reference_valid: what safetensors 0.8.0 does, in every output -------------

LEADING_SPACE = b"\x18\x00\x00\x00\x00\x00\x00\x00" + b' {"__metadata__":{}}    '  # ST202 only
TRUNCATED = b"\x48\x00\x00\x00\x00\x00\x00\x00" + (
    b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'.ljust(72)
)  # ST407: 0.8.0 refuses it


def test_reference_valid_of_strict_only_reference_and_valid_files() -> None:
    for data, valid, loads, cls in (
        (VALID, True, True, None),
        (LEADING_SPACE, False, True, None),
        (TRUNCATED, False, False, "MetadataIncompleteBuffer"),
        (pickle.dumps({"w": 1}, protocol=4), False, False, "HeaderTooLarge"),
    ):
        for profile in ("strict", "reference"):
            report = validator.validate(data, profile=profile)
            assert report.reference_valid is loads, (data[:20], profile)
            assert report.reference_error == cls, (data[:20], profile)
            assert report.to_json()["reference_valid"] is loads
        assert validator.validate(data).valid is valid


def test_a_strict_only_error_before_a_reference_error_keeps_the_reference_class() -> None:
    # ST202 (strict-only) comes first in check order; 0.8.0 still refuses the
    # truncation, and reference_error says so under strict too.
    data = b"\x49\x00\x00\x00\x00\x00\x00\x00" + b' {"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'.ljust(73)
    report = validator.validate(data)
    assert [f.slug for f in report.errors] == ["header-leading-bytes", "buffer-truncated"]
    assert (report.reference_valid, report.reference_error) == (False, "MetadataIncompleteBuffer")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from validator.cli.main import main

    code = main(list(argv))
    return code, capsys.readouterr().out


PHRASE = "(safetensors 0.8.0 loads it: strict-only findings)"


def test_check_text_says_the_reference_loads_a_strict_only_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = tmp_path / "leading_space.safetensors"
    only.write_bytes(LEADING_SPACE)
    both = tmp_path / "truncated.safetensors"
    both.write_bytes(TRUNCATED)
    code, out = _cli(capsys, "check", str(only), str(both))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{only}:8: ST202 header-leading-bytes ")
    assert lines[1] == f"{only}: invalid {PHRASE}"
    assert lines[2].startswith(f"{both}:")
    assert PHRASE not in lines[2]
    assert sum(PHRASE in line for line in lines) == 1
    assert "0 valid, 2 invalid (1 of them: safetensors 0.8.0 loads it: strict-only findings);" in lines[-1]
    code, out = _cli(capsys, "check", "--profile", "reference", str(only))
    assert (code, PHRASE in out) == (0, False)


def test_check_and_inspect_json_carry_reference_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    only = tmp_path / "leading_space.safetensors"
    only.write_bytes(LEADING_SPACE)
    code, out = _cli(capsys, "check", "--format", "json", str(only))
    doc = json.loads(out)
    assert (code, doc["files"][0]["valid"], doc["files"][0]["reference_valid"]) == (1, False, True)
    assert doc["summary"]["reference_loads"] == 1
    code, out = _cli(capsys, "inspect", "--format", "json", str(only))
    assert (code, json.loads(out)["reference_valid"]) == (1, True)
    code, out = _cli(capsys, "inspect", str(only))
    assert out.splitlines()[-1] == f"invalid: 1 error {PHRASE}"


def test_scan_outputs_carry_reference_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import xml.etree.ElementTree as ET

    only = tmp_path / "leading_space.safetensors"
    only.write_bytes(LEADING_SPACE)
    both = tmp_path / "truncated.safetensors"
    both.write_bytes(TRUNCATED)
    code, out = _cli(capsys, "scan", "--no-config", "--progress", "never", "-j", "1", str(only), str(both))
    assert code == 1
    assert f"{only}: invalid {PHRASE}" in out.splitlines()
    assert sum(PHRASE in line for line in out.splitlines()[:-1]) == 1
    # The summary line check prints too (one wording for both).
    assert f"0 valid, 2 invalid (1 of them: {PHRASE[1:-1]}); 2 errors" in out.splitlines()[-1]
    code, out = _cli(capsys, "scan", "--no-config", "--format", "json", "-j", "1", str(only), str(both))
    files = {f["path"]: f for f in json.loads(out)["files"]}
    assert (files[str(only)]["reference_valid"], files[str(both)]["reference_valid"]) == (True, False)
    code, out = _cli(capsys, "scan", "--no-config", "--format", "sarif", "-j", "1", str(only), str(both))
    results = json.loads(out)["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    assert by_rule["ST202"]["message"]["text"].endswith(PHRASE)
    assert by_rule["ST202"]["properties"]["referenceValid"] is True
    assert PHRASE not in by_rule["ST407"]["message"]["text"]
    assert by_rule["ST407"]["properties"]["referenceValid"] is False
    code, out = _cli(capsys, "scan", "--no-config", "--format", "junit", "-j", "1", str(only), str(both))
    cases = {c.get("name"): c for c in ET.fromstring(out).iter("testcase")}
    strict_only = cases[str(only)]
    assert strict_only.find("properties/property[@name='reference_valid']").get("value") == "true"
    failure = strict_only.find("failure")
    assert failure.get("message").endswith(PHRASE)
    assert PHRASE[1:-1] in failure.text
    assert cases[str(both)].find("properties/property[@name='reference_valid']").get("value") == "false"
    assert PHRASE not in cases[str(both)].find("failure").get("message")


# --- one finding for a foreign file, in every output ----------------------------


def test_a_pickle_is_one_finding_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import xml.etree.ElementTree as ET

    path = tmp_path / "model.safetensors"
    path.write_bytes(pickle.dumps({"w": [1.0]}, protocol=4))
    code, out = _cli(capsys, "check", str(path))
    lines = out.splitlines()
    assert code == 1
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:0: ST111 file-is-pickle this is a Python pickle (protocol 4)")
    assert lines[0].endswith(
        "; safetensors 0.8.0 refuses it with HeaderTooLarge (its first 8 bytes, read as a header length, exceed 100,000,000)"
    )
    assert "1 error, 0 warnings" in lines[1]
    code, out = _cli(capsys, "check", "--format", "json", "--profile", "reference", str(path))
    doc = json.loads(out)
    assert [f["code"] for f in doc["files"][0]["findings"]] == ["ST111"]
    assert doc["summary"]["errors"] == 1
    code, out = _cli(capsys, "scan", "--no-config", "--format", "sarif", "-j", "1", str(path))
    assert [r["ruleId"] for r in json.loads(out)["runs"][0]["results"]] == ["ST111"]
    code, out = _cli(capsys, "scan", "--no-config", "--format", "junit", "-j", "1", str(path))
    (failure,) = ET.fromstring(out).iter("failure")
    assert failure.get("type") == "ST111"
    assert failure.text.count("\n") == 0  # one error line
    code, out = _cli(capsys, "scan", "--no-config", "--progress", "never", "-j", "1", str(path))
    assert "ST102" not in out
    assert out.splitlines()[-1].endswith("; 1 error, 0 warnings")


def test_a_gzip_stream_is_one_finding_with_invalid_header_length() -> None:
    import gzip

    # mtime 0: the first 8 bytes read as 559,903, under the limit and past the end.
    report = validator.validate(gzip.compress(b"x" * 100, mtime=0), profile="reference")
    (finding,) = report.findings
    assert finding.slug == "file-is-archive"
    assert report.reference_error == "InvalidHeaderLength"
    assert "safetensors 0.8.0 refuses it with InvalidHeaderLength" in finding.message


# --- severity from evidence: what real writers emit ------------------------------

MLX_NO_METADATA = (
    b"\x58\x00\x00\x00\x00\x00\x00\x00"
    + b'{"__metadata__":null,"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'.ljust(88)
    + bytes(8)
)  # what mx.save_safetensors writes for metadata=None and for metadata={}


def test_null_metadata_that_mlx_writes_is_a_warning_under_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = validator.validate(MLX_NO_METADATA)
    assert report.valid
    (finding,) = report.findings
    assert (finding.slug, finding.code, finding.severity, finding.offset) == (
        "metadata-null",
        "ST303",
        validator.Severity.WARNING,
        8 + len(b'{"__metadata__":'),
    )
    assert report.reference_valid is True
    assert validator.validate(MLX_NO_METADATA, profile="reference").findings == ()  # a strict-only warning
    path = tmp_path / "adapters.safetensors"
    path.write_bytes(MLX_NO_METADATA)
    code, out = _cli(capsys, "check", str(path))
    assert code == 0
    assert "1 valid, 0 invalid; 0 errors, 1 warning" in out
    assert PHRASE not in out


@pytest.mark.parametrize(
    "slug",
    [
        "header-leading-bytes",
        "header-padding",
        "duplicate-key",
        "tensor-entry-array",
        "tensor-field-unknown",
        "dtype-not-string",
    ],
)
def test_strict_only_rules_no_writer_emits_stay_errors(slug: str) -> None:
    rule = validator.rule(slug)
    assert rule.severity is validator.Severity.ERROR
    assert rule.profiles == {validator.Profile.STRICT}


def test_remote_error_keeps_its_status_through_pickle() -> None:
    from validator._errors import RemoteError

    again = pickle.loads(pickle.dumps(RemoteError("u: HTTP 404", status=404)))
    assert (type(again), str(again), again.status) == (RemoteError, "u: HTTP 404", 404)
