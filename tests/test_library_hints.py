# The library speaks its own language (issue 36).  After `pip install
# '.[scan]'` (no ml_dtypes) or without numpy or torch, every public entry
# point that needs an extra raises an error naming the extra, as the CLI
# does, never a bare "No module named 'ml_dtypes'".  Each case runs in a
# subprocess whose sys.meta_path refuses the missing packages, the way an
# environment without them does.  And the library names its own fields, not
# the CLI's flags.
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import validator
from validator.config.install import install_hint

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"

_BLOCK = textwrap.dedent(
    """
    import json, sys
    BLOCKED = set(sys.argv[1].split(","))

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    try:
        exec(sys.argv[2])
    except ImportError as exc:
        print(json.dumps([type(exc).__name__, exc.name, str(exc)]))
    else:
        print(json.dumps(None))
    """
)

FILE = str(CORPUS / "y_dtype_bf16.safetensors")
CASES = {
    # entry point -> (the packages missing, the code, the extra or package the error names)
    "compat.numpy-ml_dtypes": ("ml_dtypes", "import validator.compat.numpy", "numpy"),
    "compat.numpy-numpy": ("numpy,ml_dtypes", "import validator.compat.numpy", "numpy"),
    "compat.torch": ("torch", "import validator.compat.torch", "torch"),
    "compat.flax-ml_dtypes": ("ml_dtypes", "import validator.compat.flax", "numpy"),
    "compat.mlx-ml_dtypes": ("ml_dtypes", "import validator.compat.mlx", "numpy"),
    "compat.paddle": ("paddle", "import validator.compat.paddle", "pip install paddlepaddle"),
    "open-numpy": (
        "ml_dtypes",
        f"import validator\nwith validator.open({FILE!r}) as f:\n    f.get(f.keys()[0])",
        "numpy",
    ),
    "open-torch": (
        "torch",
        f"import validator\nwith validator.open({FILE!r}, framework='torch') as f:\n    f.get(f.keys()[0])",
        "torch",
    ),
    "save-numpy": (
        "ml_dtypes",
        "import numpy as np, tempfile, validator\nvalidator.save({'a': np.zeros(2, np.float32)}, tempfile.mktemp())",
        "numpy",
    ),
    "safe_open-np": (
        "ml_dtypes",
        f"from validator.compat import safe_open\nwith safe_open({FILE!r}, 'np') as f:\n    f.get_tensor(f.keys()[0])",
        "numpy",
    ),
    "safe_open-flax": (
        "jax",
        f"from validator.compat import safe_open\nwith safe_open({FILE!r}, 'flax') as f:\n    f.get_tensor(f.keys()[0])",
        "pip install jax",
    ),
}


def _hint(extra: str) -> str:
    return extra if extra.startswith("pip install ") else install_hint(extra)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_each_entry_point_names_the_extra_it_needs(case: str) -> None:
    blocked, code, extra = CASES[case]
    done = subprocess.run(
        [sys.executable, "-c", _BLOCK, blocked, code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    caught = json.loads(done.stdout.splitlines()[-1])
    assert caught is not None, "nothing was missing"
    kind, name, message = caught
    assert kind == "MissingExtraError"  # a ModuleNotFoundError: `except ImportError` still catches it
    assert name in blocked.split(",")
    assert message.endswith(f" needs {name}, which is not installed: {_hint(extra)}"), message


def test_one_entry_point_in_process_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fast check of the same path: ml_dtypes missing, numpy's dtype table is asked for.
    from validator.io import dtypes_np
    from validator.io._extras import MissingExtraError

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # `import ml_dtypes` raises ModuleNotFoundError
    with pytest.raises(MissingExtraError) as caught:
        dtypes_np._resolve("ml_dtypes.bfloat16")
    assert caught.value.name == "ml_dtypes"
    assert str(caught.value) == (
        f"numpy's bfloat16, float8, float6 and float4 types needs ml_dtypes, which is not installed: "
        f"{install_hint('numpy')}"
    )
    assert isinstance(caught.value, ImportError)


# -- the library names its own fields --------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"ignore": ("ST10",)},
            "ignore ST10: safetensors 0.8.0 rejects every file that breaks ST101 file-too-small; it cannot be ignored",
        ),
        ({"select": ("nope",)}, "select nope: no rule has this code, slug or code prefix; `stcheck rules` lists them"),
        (
            {"ignore": ("header-unalligned",)},
            "ignore header-unalligned: no rule has this code, slug or code prefix; did you mean header-unaligned?",
        ),
    ],
)
def test_vet_names_its_own_fields_not_the_clis_flags(tmp_path: Path, options: dict, message: str) -> None:
    with pytest.raises(validator.VetError) as caught:
        validator.vet([str(tmp_path)], validator.VetOptions(no_config=True, **options))
    assert str(caught.value) == message
