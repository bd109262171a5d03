# The public API type-checks in user code: a script calling the lazy exports
# (`validator.open`, `save`, `open_index`, `validate_index`) and the eager
# ones passes `mypy --strict`, and a misuse of them is caught.
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parent.parent

USER_SCRIPT = """
from __future__ import annotations

import numpy as np

import validator


def roundtrip(path: str, index: str) -> int:
    validator.save({"w": np.zeros((2, 2), dtype=np.float32)}, path, metadata={"format": "np"})
    with validator.open(path, framework="numpy") as f:
        names: list[str] = f.keys()
        dtype: str = f.info("w").dtype
    report: validator.Report = validator.validate(path)
    valid: bool = report.valid and validator.is_valid(path)
    sharded = validator.validate_index(index)
    first: validator.Finding | None = sharded.first_error
    with validator.open_index(index) as model:
        count = len(model)
    return len(names) + len(dtype) + count + int(valid) + int(first is None)
"""


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(ROOT)}  # an editable install hides the package from mypy
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, str(script)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )


@pytest.mark.slow
def test_user_script_passes_mypy_strict(tmp_path):
    done = mypy(tmp_path, USER_SCRIPT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_catches_misuse_of_a_lazy_export(tmp_path):
    done = mypy(tmp_path, "import validator\n\nvalidator.open(42)\nvalidator.save([], 'x')\n")
    assert done.returncode == 1
    assert 'Argument 1 to "SafetensorsFile" has incompatible type "int"' in done.stdout  # validator.open is the class
    assert 'Argument 1 to "save" has incompatible type' in done.stdout
