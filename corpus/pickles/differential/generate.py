# Strategy: write the differential campaign's seeds (validator.formats.oracle)
# and their MANIFEST.json.  The files come from the campaign's own builder,
# validator.fuzz.pickle_mutator.seed_files(): hostile and hand-made files are
# assembled opcode by opcode; the rest are written by the real writers
# (pickle.dumps, numpy, joblib, torch.save) of the versions installed.  Each
# is built twice: a file whose two builds differ (torch.save's serialization
# id and storage keys) is marked "deterministic": false.
#
#   python corpus/pickles/differential/generate.py             # rewrite the files here and MANIFEST.json
#   python corpus/pickles/differential/generate.py --out DIR   # write elsewhere
#
# Names: n_<what>  some real loader resolves a global off stcheck's allowlists
#                  (a harmless one: os.getcwd, builtins.len), so stcheck must not call it clean;
#        y_<what>  no loader resolves anything off the allowlists;
#        d_<what>  only data-tier constructors (numpy object arrays of builtin values).
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MANIFEST = "MANIFEST.json"
# The writer each name's stem says made it; anything else is assembled.
WRITERS = (
    ("pickle_dumps", "pickle"),
    ("np_save", "numpy"),
    ("pickle_numpy", "numpy"),
    ("joblib_dump", "joblib"),
    ("torch_save", "torch"),
)


def versions() -> dict[str, str]:
    found = {"pickle": f"Python {sys.version.split()[0]}"}
    for lib in ("numpy", "joblib", "torch"):
        with contextlib.suppress(ImportError):
            found[lib] = f"{lib} {__import__(lib).__version__}"
    return found


def provenance(name: str, v: dict[str, str]) -> str:
    for stem, lib in WRITERS:
        if stem in name:
            return f"written by {v.get(lib, lib)} (validator/fuzz/pickle_mutator.py _writer_seeds)"
    return "assembled by validator/fuzz/pickle_mutator.py seed_files"


def expected(name: str) -> str:
    return {"n": "runs-code", "y": "no-code", "d": "data-only"}[name[0]]


def _holds_storages(name: str) -> bool:
    # A storage's key is stable within one process and not across them.
    return "torch_save" in name or "tensor" in name


def build(out: Path) -> dict[str, dict[str, object]]:
    sys.path.insert(0, str(ROOT))
    from validator.fuzz.pickle_mutator import seed_files

    first, second = seed_files(), seed_files()
    v = versions()
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict[str, object]] = {}
    for name, data in sorted(first.items()):
        (out / name).write_bytes(data)
        manifest[name] = {
            "expected": expected(name),
            "provenance": provenance(name, v),
            "deterministic": second.get(name) == data and not _holds_storages(name),
        }
    (out / MANIFEST).write_text(json.dumps({"files": manifest}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    build(args.out)


if __name__ == "__main__":
    main()
