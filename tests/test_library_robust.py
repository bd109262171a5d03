# The library entry points as a user calling them meets them: special files,
# files that are not safetensors at all, findings without an offset, each
# seen misbehaving before its fix (a FIFO blocked validate() and open(); the
# exceptions led with ST102 for a pickle; format() printed "path::").
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import validator

ROOT = Path(__file__).resolve().parent.parent


def test_format_without_an_offset_has_no_empty_field() -> None:
    finding = validator.Finding(validator.rule("json-syntax"), "m", None)
    assert finding.format("p.safetensors") == "p.safetensors: ST205 json-syntax m"
    assert finding.format("bad\nname") == "bad\\nname: ST205 json-syntax m"  # one line, as the CLI prints it


@pytest.mark.parametrize("call", ["validate", "open", "is_valid", "validate_index", "compat"])
def test_fifo_is_refused_without_blocking(tmp_path: Path, call: str) -> None:
    name = "model.safetensors.index.json" if call == "validate_index" else "f.safetensors"
    fifo = tmp_path / name
    os.mkfifo(fifo)
    code = {
        "validate": "validator.validate(p)",
        "open": "validator.open(p)",
        "is_valid": "validator.is_valid(p)",
        "validate_index": "validator.validate_index(p)",
        "compat": "__import__('validator.compat.numpy').compat.numpy.load_file(p)",
    }[call]
    probe = textwrap.dedent(f"""
        import sys, validator
        p = sys.argv[1]
        try:
            {code}
        except OSError as exc:
            print("OSError", type(exc).__name__, exc)
        """)
    # A blocking open of the FIFO would hang here: the timeout turns that into a failure.
    done = subprocess.run(
        [sys.executable, "-c", probe, str(fifo)], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OSError"), done.stdout
    assert "not a regular file" in done.stdout


def _pickle_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.safetensors"
    path.write_bytes(pickle.dumps({"w": [1.0, 2.0]}, protocol=4))
    return path


def test_open_of_a_pickle_names_the_pickle_first(tmp_path: Path) -> None:
    with pytest.raises(validator.InvalidFileError) as caught:
        validator.open(_pickle_file(tmp_path))
    message = str(caught.value)
    assert "ST111 file-is-pickle" in message.split("(and", maxsplit=1)[0]
    assert "torch.load" in message
    assert "ST102" not in message  # the length-prefix finding is counted, not shown


def test_compat_load_of_a_pickle_keeps_the_reference_phrase_and_names_the_pickle(tmp_path: Path) -> None:
    from validator.compat import SafetensorError
    from validator.compat.numpy import load_file

    with pytest.raises(SafetensorError) as caught:
        load_file(_pickle_file(tmp_path))
    message = str(caught.value)
    assert message.startswith("Error while deserializing header: header too large (")
    assert "ST111 file-is-pickle" in message
