# Strategy: the evidence survey of corpus/writers/README.md, computed.
#
# For every strict-only rule, every warning rule and every index/folder
# construct that issue 20 disputes: which surveyed writers emit the
# construct (from the facts generate.py measured in manifest.json), and what
# the loaders do with it, from two sources: the loaders probed on the
# writers' own files (manifest.json: safetensors 0.8.0, mlx, tinygrad, gguf,
# huggingface_hub, torch's DCP reader, transformers' load_state_dict, each
# writer's own loader) and the conformance results on the corpus files that
# hold exactly the construct (corpus/results/results.jsonl).  Standard
# library only; tests/test_writers_corpus.py checks that the README carries
# this output unchanged.
#
#   python corpus/writers/survey.py            # print the markdown tables
#   python corpus/writers/survey.py --write    # put them into README.md
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent
BEGIN = "<!-- survey:begin (python corpus/writers/survey.py) -->"
END = "<!-- survey:end -->"
Facts = dict[str, Any]


def _c(f: Facts) -> Facts:
    constructs: Facts = f.get("constructs", {})
    return constructs


# rule code -> (slug, construct, predicate on a file's facts)
FILE_RULES: dict[str, tuple[str, str, Callable[[Facts], bool]]] = {
    "ST202": ("header-leading-bytes", "whitespace before '{'", lambda f: _c(f).get("leading_whitespace", 0) > 0),
    "ST203": (
        "header-padding",
        "padding other than 0x20",
        lambda f: any(k != "0x20" for k in _c(f).get("padding_kinds", [])),
    ),
    "ST210": (
        "duplicate-key",
        "a tensor name or metadata key twice",
        lambda f: bool(_c(f).get("duplicate_top_level_keys") or _c(f).get("duplicate_metadata_keys")),
    ),
    "ST303": ("metadata-null", '"__metadata__": null', lambda f: _c(f).get("metadata") == "null"),
    "ST305": (
        "tensor-entry-array",
        "entry written as an array",
        lambda f: _c(f).get("entry_forms", {}).get("array", 0) > 0,
    ),
    "ST307": ("tensor-field-unknown", "unknown field in an entry", lambda f: bool(_c(f).get("unknown_fields"))),
    "ST309": ("dtype-not-string", "dtype as a one-key object", lambda f: _c(f).get("dtype_objects", 0) > 0),
    "ST104": (
        "header-unaligned",
        "header length not a multiple of 8",
        lambda f: _c(f).get("header_size_mod_8", 0) != 0,
    ),
    "ST312": ("tensor-name-suspicious", "empty name, controls or bidi", lambda f: bool(_c(f).get("suspicious_names"))),
    "ST408": (
        "tensor-unaligned",
        "tensor start not a multiple of its size",
        lambda f: bool(_c(f).get("unaligned_tensors")),
    ),
    "ST601": ("tensor-nan-inf", "NaN or Inf values", lambda f: bool(_c(f).get("nan_inf_tensors"))),
    "ST602": ("tensor-all-zero", "a tensor of zero bytes", lambda f: bool(_c(f).get("all_zero_tensors"))),
    "ST603": (
        "data-zero-tail",
        "data region ends in >= 1 MiB of zeros (or is all zeros)",
        lambda f: (
            _c(f).get("data_bytes", 0) > 0
            and (
                _c(f).get("data_zero_tail_bytes", 0) >= 1 << 20
                or _c(f).get("data_zero_tail_bytes") == _c(f).get("data_bytes")
            )
        ),
    ),
    "ST604": (
        "tensor-embedded-executable",
        "U8/I8 tensor starting with pickle/ZIP/ELF/PE magic",
        lambda f: bool(_c(f).get("byte_tensors_with_embedded_magic")),
    ),
    "ST605": (
        "metadata-suspicious",
        "'..', controls or huge names/values",
        lambda f: bool(_c(f).get("odd_names_or_metadata")),
    ),
}
# the controls: constructs no rule is about, to tell a loader's refusal of the rule's construct from its
# refusal of every file of that kind (transformers 4.x refuses every file without a "format" metadata key)
CONTROLS: dict[str, tuple[str, str, Callable[[Facts], bool]]] = {
    "(control)": ("no __metadata__", "no __metadata__ key at all", lambda f: _c(f).get("metadata") == "absent"),
    "(control) ": (
        "no pt/tf/flax format",
        "__metadata__ present, with no 'format' key or a format other than pt/tf/flax",
        lambda f: (
            isinstance(_c(f).get("metadata"), dict) and _c(f)["metadata"].get("format") not in {"pt", "tf", "flax"}
        ),
    ),
}
# index and folder constructs: (rule today, construct, predicate on an index's or folder's facts)
INDEX_RULES: dict[str, tuple[str, Callable[[Facts], bool]]] = {
    "float total_size": ("ST501 index-invalid (both profiles)", lambda f: f.get("total_size_type") == "float"),
    "total_size differs from the tensors' bytes": (
        "ST508 index-total-size-mismatch",
        lambda f: (
            f.get("total_size_true") is not None
            and f.get("total_size") is not None
            and f["total_size"] != f["total_size_true"]
        ),
    ),
    "no total_size": ("ST511 index-total-size-missing (warning)", lambda f: f.get("total_size_type") == "absent"),
    "tied name listed, no shard holds it": (
        "ST505 index-tensor-missing",
        lambda f: bool(f.get("names_listed_not_stored_tie_like")),
    ),
    "shard beside the index that it does not name": ("none", lambda f: bool(f.get("orphan_shards"))),
    "empty weight_map": ("none (validate_index: valid)", lambda f: bool(f.get("weight_map_empty"))),
    "index name with a dotted variant": (
        "check INDEX: ST102 + ST118; folder check skips it",
        lambda f: bool(f.get("index_name_variant_dotted")),
    ),
    "shard named by the index is missing": ("ST503 index-shard-missing", lambda f: bool(f.get("shard_files_missing"))),
}
FOLDER_RULES: dict[str, tuple[str, Callable[[Facts], bool]]] = {
    "pickle (.bin, ZIP pickle) beside the safetensors": ("none: not examined", lambda f: bool(f.get("pickles"))),
    "Python file (custom code)": ("none: not examined", lambda f: bool(f.get("python_files"))),
}


def _writers(targets: list[Facts], kind: str, pred: Callable[[Facts], bool]) -> tuple[str, list[Facts]]:
    hits = [t for t in targets if t["kind"] == kind and pred(t["facts"])]
    per = Counter(
        f"{t['writer']['name']} {t['writer']['version']}" + (" (synth.)" if "synthesized_from" in t else "")
        for t in hits
    )
    text = ", ".join(f"{w}: {n}" for w, n in sorted(per.items())) or "none of the surveyed writers"
    return text, hits


def _results_of(t: Facts) -> dict[str, Facts]:
    """Every loader's result on one file, by a label that names the loader and its version."""
    results = {
        "safetensors 0.8.0": {"result": "accept" if t["facts"]["safetensors_0_8_0"]["reads"] else "reject"},
        "own loader": {"result": "accept" if t["loader"]["loads"] else "reject", "detail": t["loader"]["error"]},
    }
    for name, result in t["facts"]["loaders"].items():
        label = f"{name} {result['version']}" if result.get("version") else name
        if name.startswith("transformers-"):
            label = f"{name} load_state_dict"
        results[label] = result
    return results


def _loaders_on(hits: list[Facts]) -> str:
    """Each loader's results on the files: those that read all, then the others with a reason."""
    if not hits:
        return "-"
    per: dict[str, Counter[str]] = {}
    why: dict[str, list[str]] = {}
    for t in hits:
        for label, result in _results_of(t).items():
            if result["result"] == "unavailable":
                continue
            per.setdefault(label, Counter())[result["result"]] += 1
            if result["result"] != "accept" and result.get("detail"):
                reason = str(result["detail"]).replace(t["path"], "FILE")[:90]
                if reason not in why.setdefault(label, []) and len(why[label]) < 2:
                    why[label].append(reason)
    n = len(hits)
    good = sorted(k for k, c in per.items() if c["accept"] == n)
    parts = [f"read all {n}: {', '.join(good)}" if good else f"none reads all {n}"]
    for label, c in sorted(per.items()):
        if label in good:
            continue
        counts = ", ".join(f"{r} {c[r]}" for r in sorted(c))
        reasons = " or ".join(f"`{r}`" for r in why.get(label, []))
        parts.append(f"{label}: {counts}" + (f" ({reasons})" if reasons else ""))
    return "; ".join(parts).replace("|", "\\|")


def _conformance(slug: str, manifest: Facts, results: list[Facts]) -> str:
    files = {f["file"] for f in manifest["files"] if slug in f["rules"] and f["expect"]["reference"] == "accept"}
    if not files:
        return "no corpus file"
    per: dict[str, Counter[str]] = {}
    for r in results:
        if r["file"] in files and not r["implementation"].startswith("stcheck"):
            per.setdefault(r["implementation"], Counter())[r["status"]] += 1
    n = len(files)
    ok = {"i-accepted", "expected"}
    good = sorted(k for k, c in per.items() if sum(c[s] for s in ok) == n)
    bad = [
        f"{k}: {', '.join(f'{s} {c[s]}' for s in sorted(c) if s not in ok)}"
        for k, c in sorted(per.items())
        if k not in good
    ]
    head = f"{len(good)} of {len(per)} read all {n}" + (" (all but: " + "; ".join(bad) + ")" if bad else "")
    return head + f" [{', '.join(sorted(files))}]"


def _rules_catalogue() -> dict[str, dict[str, str]]:
    import sys

    sys.path.insert(0, str(CORPUS.parent))
    from validator import RULES

    return {
        r.code: {
            "slug": r.slug,
            "severity": r.severity.value,
            "profiles": "/".join(sorted(p.value for p in r.profiles)),
        }
        for r in RULES
    }


def render() -> str:
    targets = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))["targets"]
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    results = [
        json.loads(line) for line in (CORPUS / "results" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    results = [r for r in results if r.get("type") == "result"]
    catalogue = _rules_catalogue()
    lines = [
        BEGIN,
        "",
        (
            "| rule | severity today | construct | writers that emit it (files) | loaders on those writer files "
            "| loaders on the corpus files that hold it |"
        ),
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for code, (slug, construct, pred) in {**FILE_RULES, **CONTROLS}.items():
        rule = catalogue.get(code)
        writers, hits = _writers(targets, "file", pred)
        severity = f"{rule['severity']} ({rule['profiles']})" if rule else "-"
        on_corpus = _conformance(slug, manifest, results)
        label = f"{code.strip()} {slug}"
        lines.append(f"| {label} | {severity} | {construct} | {writers} | {_loaders_on(hits)} | {on_corpus} |")
    lines += [
        "",
        (
            "| index or folder construct | what stcheck does on main | writers that emit it (targets) "
            "| the writers' loaders on them |"
        ),
        "| --- | --- | --- | --- |",
    ]
    for construct, (today, pred) in INDEX_RULES.items():
        writers, hits = _writers(targets, "index", pred)
        lines.append(f"| {construct} | {today} | {writers} | {_loads(hits, targets)} |")
    for construct, (today, pred) in FOLDER_RULES.items():
        writers, hits = _writers(targets, "folder", pred)
        lines.append(f"| {construct} | {today} | {writers} | {_loads(hits, targets)} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _loads(hits: list[Facts], targets: list[Facts]) -> str:
    """The writer's own loader and the other releases' loaders (cross_loads, on the folder)."""
    if not hits:
        return "-"
    folders = {t["path"]: t for t in targets if t["kind"] == "folder"}
    per: dict[str, Counter[str]] = {}
    for t in hits:
        own = f"own ({t['writer']['name']} {t['writer']['version']})"
        per.setdefault(own, Counter())["loads" if t["loader"]["loads"] else "fails"] += 1
        folder = t if t["kind"] == "folder" else folders.get(t["path"].rsplit("/", 1)[0], {})
        for name, fact in folder.get("facts", {}).get("cross_loads", {}).items():
            per.setdefault(name, Counter())["loads" if fact["loads"] else "fails"] += 1
    return "; ".join(f"{k}: {', '.join(f'{r} {c[r]}' for r in sorted(c))}" for k, c in sorted(per.items()))


def write_readme() -> None:
    """Replace the survey block of README.md with the current output."""
    readme = HERE / "README.md"
    text = readme.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END + "\n")
    readme.write_text(head + render() + tail, encoding="utf-8")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--write"]:
        write_readme()
    elif not sys.argv[1:]:
        print(render(), end="")
    else:
        print("usage: python corpus/writers/survey.py [--write]", file=sys.stderr)
        sys.exit(2)
