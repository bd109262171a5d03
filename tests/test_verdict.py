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
