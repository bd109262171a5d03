# Strategy: build every corpus file from the declarative recipes in
# recipes.py, deterministically, and write manifest.json beside them.
#
# A recipe says what the header holds (tensor entries, metadata, or exact
# JSON text), how it is padded, and how the file around it is cut; this
# module turns that into bytes.  Nothing here depends on the clock, the
# machine or dict ordering, so running it twice gives byte-identical files:
# CI regenerates into a temporary directory and compares.
#
#   python corpus/generate.py                 # rewrite corpus/*.safetensors and manifest.json
#   python corpus/generate.py --out DIR       # write somewhere else (tests compare)
#   python corpus/generate.py --large --out DIR   # also the ~100 MB "large" recipes
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from recipes import BITS, RECIPES, Raw, Recipe  # noqa: E402

MANIFEST = "manifest.json"
SUFFIX = ".safetensors"
_VERDICTS = {"y": ("accept", "accept"), "n": ("reject", "reject"), "i": ("reject", "accept")}


def dumps(value: object) -> str:
    """Serialise a recipe value to compact JSON, keeping order and duplicates.

    Objects are dicts or lists of (key, value) pairs (which may repeat a key);
    ``Raw`` values are written verbatim, so a recipe can hold tokens the
    ``json`` module cannot produce (NaN, ``1.0`` where an int is wanted, ``-0``,
    numbers past 2^64, broken escapes).
    """
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Pairs):
        return "{" + ",".join(dumps(k) + ":" + dumps(v) for k, v in value.items) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(dumps(k) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


class Pairs:
    """An object given as ordered (key, value) pairs."""

    def __init__(self, items: list[tuple[object, object]]) -> None:
        self.items = items


def nbytes(dtype: str, shape: list[int]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count * BITS[dtype] // 8


def data_stream(n: int) -> bytes:
    """n deterministic, non-repeating bytes for the data region."""
    out = bytearray()
    block = 0
    while len(out) < n:
        out += hashlib.sha256(b"stcheck-corpus-data:%d" % block).digest()
        block += 1
    return bytes(out[:n])


def header_pairs(recipe: Recipe) -> tuple[list[tuple[Any, Any]], int]:
    """The header's (key, value) pairs and the data length they imply."""
    pairs: list[tuple[Any, Any]] = []
    if "metadata" in recipe:
        pairs.append(("__metadata__", recipe.get("metadata")))
    end = 0
    for item in recipe.get("tensors", []):
        name, dtype, shape = item[:3]
        size = nbytes(dtype, shape)
        pairs.append((name, {"dtype": dtype, "shape": shape, "data_offsets": [end, end + size]}))
        end += size
    for key, value in recipe.get("entries", []):
        pairs.append((key, value))
        offsets = value.get("data_offsets") if isinstance(value, dict) else None
        if isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets):
            end = max(end, *offsets)
    return pairs, end


def build(recipe: Recipe) -> bytes:
    """The file bytes a recipe describes."""
    if "raw" in recipe:
        return bytes(recipe["raw"])
    if "json" in recipe:
        text = recipe["json"]
        body = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        implied = 0
    else:
        pairs, implied = header_pairs(recipe)
        body = dumps(Pairs(pairs)).encode("utf-8")
    body = bytes(recipe.get("lead", b"")) + body
    target = recipe.get("header_size")
    pad_byte = bytes(recipe.get("pad", b" "))
    if target is not None:
        if len(body) > target:
            msg = f"{recipe['name']}: header is {len(body)} bytes, more than header_size {target}"
            raise ValueError(msg)
        header = body + pad_byte * (target - len(body))
    elif recipe.get("align", 8):
        align = recipe.get("align", 8)
        header = body + pad_byte * (-len(body) % align)
    else:
        header = body
    header += bytes(recipe.get("tail", b""))
    n = recipe.get("n", len(header))
    data_len = recipe.get("data", implied)
    data = data_stream(data_len) + bytes(recipe.get("trailing", b""))
    out = n.to_bytes(8, "little") + header + data
    cut = recipe.get("truncate", 0)
    return out[: len(out) - cut] if cut else out


def manifest_entry(recipe: Recipe, blob: bytes | None) -> dict[str, Any]:
    name = recipe["name"]
    strict, reference = _VERDICTS[name[0]]
    entry: dict[str, Any] = {
        "file": name + SUFFIX,
        "expect": {"strict": recipe.get("strict", strict), "reference": recipe.get("reference", reference)},
        "rules": sorted(recipe.get("rules", [])),
        "description": recipe["desc"],
        "source": recipe["source"],
    }
    if recipe.get("large"):
        entry["large"] = True
    if blob is not None:
        entry["size"] = len(blob)
        entry["sha256"] = hashlib.sha256(blob).hexdigest()
    return entry


def check_recipes() -> None:
    seen: set[str] = set()
    for recipe in RECIPES:
        name = recipe["name"]
        if name in seen:
            msg = f"duplicate recipe name {name}"
            raise ValueError(msg)
        seen.add(name)
        if name[:2] not in ("y_", "n_", "i_"):
            msg = f"{name}: must start with y_, n_ or i_"
            raise ValueError(msg)


def generate(out: Path, *, large: bool = False, only_large: bool = False) -> list[dict[str, Any]]:
    """Write the corpus files (and manifest.json unless only_large) to out."""
    check_recipes()
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for recipe in RECIPES:
        is_large = bool(recipe.get("large"))
        blob = None
        if (is_large and large) or (not is_large and not only_large):
            blob = build(recipe)
            tmp = out / (recipe["name"] + SUFFIX + ".tmp")
            tmp.write_bytes(blob)
            tmp.replace(out / (recipe["name"] + SUFFIX))
        entries.append(manifest_entry(recipe, None if is_large else blob if blob is not None else build(recipe)))
    if not only_large:
        doc = {
            "$schema": "./manifest.schema.json",
            "description": "stcheck conformance corpus: y_ must accept, n_ must reject, i_ implementation-defined.",
            "verdicts": {
                "y": "accepted by the strict and the reference profile",
                "n": "rejected by both profiles (a fault safetensors 0.8.0 refuses)",
                "i": "implementation-defined: the written spec and the reference disagree, or the spec is silent",
            },
            "files": entries,
        }
        (out / MANIFEST).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the stcheck conformance corpus.")
    parser.add_argument("--out", type=Path, default=HERE, help="output directory (default: corpus/)")
    parser.add_argument("--large", action="store_true", help="also write the ~100 MB recipes flagged large")
    parser.add_argument("--only-large", action="store_true", help="write only the large recipes (no manifest)")
    args = parser.parse_args(argv)
    entries = generate(args.out, large=args.large or args.only_large, only_large=args.only_large)
    print(f"{len(entries)} recipes -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
