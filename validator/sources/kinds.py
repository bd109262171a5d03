# Strategy: what a file of a model folder is, when it is not a safetensors
# file or an index, and whether loading it can run code.  A model repository
# routinely carries pickles (`pytorch_model.bin`, `training_args.bin`,
# `*.pt`, `*.ckpt`), custom modeling code for `trust_remote_code`, and
# configuration, tokenizer and documentation files beside its safetensors.
# classify() gives each such file a kind (a label from the table below, which
# is data) and, for the two kinds a loader can execute, a finding:
#
# - a pickle: some loader would unpickle its bytes (torch.load,
#   numpy.load(allow_pickle=True), joblib.load or pickle.load, each with its
#   own dispatch: validator.formats.judge), or its name says pickle (`.pt`,
#   `.pth`, `.ckpt`, `.pkl`, `.pickle`, `.joblib`, `.npy`, `.npz`, and
#   these compressed).  `.bin` and `.dat` are pickles only by their content:
#   OpenVINO, Core ML and old GGML weights are `.bin` files too, and a file
#   whose byte-0 read fails before any import runs no code in any loader.
#   Each such file is then read statically (validator.pickles: its pickle
#   streams, never its tensor data, never executed):
#   - pickle-weights-only (warning): every global it imports is on the
#     allowlist (what torch.load(weights_only=True) allows, NumPy's array
#     reconstruction, the builtin containers): a classic state dict;
#   - pickle-file (error), naming what loading it would call: anything
#     else, including a pickle that cannot be read to its STOP.
# - archive-unreadable (warning): an archive, or members of one, that
#   stcheck cannot open (encryption, flag bits, methods, 7-Zip, RAR, a zip
#   no model loader reads); archive-member-escapes (error): a member name
#   that climbs out of the folder it is unpacked into.
# - custom-code (warning): a `.py` file, named for what would run it.
#   transformers' `trust_remote_code=True` runs only the modules a config's
#   `auto_map` names (`"auto_map": {"AutoModel": "modeling_tiny.TinyModel"}`
#   runs modeling_tiny.py), and whatever those import.  So the file's folder's
#   config.json (and tokenizer_config.json, preprocessor_config.json,
#   processor_config.json, which carry auto_map for their classes) is read,
#   each at most CONFIG_LIMIT bytes, bad JSON read as no auto_map: a file an
#   auto_map names says which entry would run it; any other .py keeps the
#   warning with a milder text (it runs only when a mapped module imports it,
#   which stcheck does not follow).  An hf:// listing is judged by name:
#   nothing is fetched, and the text says the configuration was not read.
#
# A pickle beside a safetensors copy of the same weights (pytorch_model.bin
# beside model.safetensors, or beside an index of model-*.safetensors) says
# so, so that the user deletes the pickle or loads with use_safetensors=True.
# A file is mapped, not read: the dispatch touches its headers, a zip's
# directory and the first bytes of each member, and the pickle streams
# (each bounded); never tensor data.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH118, PTH119, PTH120, PTH122, PTH208
from __future__ import annotations

import json
import mmap
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from validator._check import Checker
from validator._errors import SourceError
from validator._prefix import prefix_rule
from validator._rules import PREFIX_LEN, Severity
from validator._sniff import SNIFF_LEN, identify
from validator._source import RegularFile, os_error, read_exact

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

    from validator._findings import Finding
    from validator.formats import Judged
    from validator.pickles import PickleVerdict

__all__ = [
    "CODE_CONFIGS",
    "CONFIG_LIMIT",
    "KINDS",
    "LISTED_CODE",
    "PICKLE_NAMES",
    "Other",
    "auto_mapped",
    "classify",
    "classify_bytes",
    "count_kinds",
    "custom_code_message",
    "kinds_line",
    "listed_kind",
    "lone_file",
    "name_kind",
    "pickle_advice",
    "pickle_json",
    "safetensors_copy",
]

# Names that are only ever pickles (a loader unpickles them by their name).
PICKLE_NAMES: Final = (".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".joblib")

# (label, exact file names, name suffixes), tried in order; the first match
# names the kind.  Lower-case comparison.  Files no row matches are named by
# their content (_BY_CONTENT), else "other".
KINDS: Final[tuple[tuple[str, frozenset[str], tuple[str, ...]], ...]] = (
    ("Python", frozenset(), (".py",)),
    (
        "tokenizer",
        frozenset(
            {
                "tokenizer.json",
                "tokenizer_config.json",
                "special_tokens_map.json",
                "added_tokens.json",
                "vocab.json",
                "vocab.txt",
                "merges.txt",
                "spiece.model",
                "tokenizer.model",
                "sentencepiece.bpe.model",
                "preprocessor_config.json",
                "chat_template.jinja",
                "chat_template.json",
            }
        ),
        (".tiktoken", ".spm"),
    ),
    ("tokenizer model", frozenset(), (".model",)),
    ("JSON", frozenset(), (".json", ".jsonl")),
    (
        "text",
        frozenset({"license", "readme", "notice", "copying", ".gitattributes", ".gitignore", "version"}),
        (".md", ".txt", ".rst", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".csv", ".tsv", ".jinja", ".html", ".xml"),
    ),
    ("image", frozenset(), (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".ico")),
    ("audio", frozenset(), (".wav", ".mp3", ".flac", ".ogg")),
    ("GGUF", frozenset(), (".gguf",)),
    ("ONNX", frozenset(), (".onnx", ".onnx_data", ".ort")),
    ("Flax msgpack", frozenset(), (".msgpack",)),
    ("HDF5", frozenset(), (".h5", ".hdf5", ".keras")),
    ("TensorFlow Lite", frozenset(), (".tflite",)),
    ("TensorFlow", frozenset(), (".pb",)),
    ("NumPy", frozenset(), (".npy", ".npz")),
    ("archive", frozenset(), (".zip", ".tar", ".gz", ".tgz", ".xz", ".zst", ".7z", ".bz2")),
)
# validator._sniff's rule slug -> the kind a file of that content is.
_BY_CONTENT: Final = {
    "file-is-git-lfs-pointer": "Git LFS pointer",
    "file-is-numpy": "NumPy",
    "file-is-zip": "archive",
    "file-is-archive": "archive",
    "file-is-gguf": "GGUF",
    "file-is-hdf5": "HDF5",
    "file-is-tflite": "TensorFlow Lite",
    "file-is-executable": "executable",
    "file-is-html": "text",
    "file-is-xml": "text",
    "file-is-json": "JSON",
    "file-is-text": "text",
}
_SHARD: Final = re.compile(r"-\d{3,6}-of-\d{3,6}$")


@dataclass(frozen=True)
class Other:
    """A file of a folder that is not a safetensors file or an index."""

    path: str
    kind: str  # a label of KINDS, "pickle", "empty" or "other"
    size: int
    findings: tuple[Finding, ...] = ()
    pickle: dict[str, Any] | None = None  # a pickle's static reading (pickle_json)

    @property
    def valid(self) -> bool:
        """No finding at error severity."""
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_json(self) -> dict[str, object]:
        """The entry in a report's ``other_files``."""
        return {
            "path": self.path,
            "kind": self.kind,
            "file_size": self.size,
            "valid": self.valid,
            "findings": [f.to_json() for f in self.findings],
            **({"pickle": self.pickle} if self.pickle is not None else {}),
        }


def name_kind(name: str) -> str | None:
    """The kind a file name alone gives, or None."""
    low = os.path.basename(name).lower()
    for label, names, suffixes in KINDS:
        if low in names or low.endswith(suffixes):
            return label
    return None


# The configurations whose auto_map names code that trust_remote_code runs.
CODE_CONFIGS: Final = ("config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json")
CONFIG_LIMIT: Final = 1 << 20  # bytes read of each: a config is a few KiB
LISTED_CODE: Final = (
    "custom code, judged by its name (config.json was not read): "
    "`trust_remote_code=True` runs it if a config's auto_map names it"
)


def _auto_map_entries(doc: object) -> Iterable[tuple[str, str]]:
    """(class, ``module.Name``) of each auto_map entry of a parsed config;
    a tokenizer's entry is a list of one or two references."""
    auto_map = doc.get("auto_map") if isinstance(doc, dict) else None
    if not isinstance(auto_map, dict):
        return
    for auto, ref in auto_map.items():
        for one in ref if isinstance(ref, list) else [ref]:
            if isinstance(one, str) and isinstance(auto, str):
                yield auto, one


def _read_config(path: str) -> object:
    """A config's JSON, or None when it is absent, larger than CONFIG_LIMIT, unreadable or not JSON."""
    try:
        with RegularFile(path) as (fd, st):
            if st.st_size > CONFIG_LIMIT:
                return None
            raw = read_exact(fd, 0, st.st_size)
        return json.loads(raw)
    except (OSError, SourceError, ValueError, RecursionError):
        return None


def auto_mapped(folder: str) -> dict[str, list[str]] | None:
    """``{module file name: ["config.json auto_map AutoModel: modeling_tiny.TinyModel", ...]}``
    from the configurations of ``folder``; None when it holds none of CODE_CONFIGS."""
    found: dict[str, list[str]] = {}
    read = False
    for name in CODE_CONFIGS:
        path = os.path.join(folder, name)
        if not os.path.lexists(path):
            continue
        read = True
        for auto, ref in _auto_map_entries(_read_config(path)):
            module, dot, _cls = ref.rpartition(".")
            if not dot or "--" in module:  # "org/repo--module.Class": code from another repository
                continue
            found.setdefault(module.replace(".", "/") + ".py", []).append(f"{name} auto_map {auto}: {ref}")
    return found if read else None


def custom_code_message(name: str, mapped: dict[str, list[str]] | None) -> str:
    """ST702's text for the Python file ``name`` (relative to its config's folder)."""
    if mapped is None:
        return (
            "a Python file, and no config.json here names code to run: "
            "`trust_remote_code=True` runs only what a config's auto_map names"
        )
    entries = mapped.get(name)
    if entries:
        more = f" and {len(entries) - 1} more" if len(entries) > 1 else ""
        return f"custom code: {entries[0]}{more}: `trust_remote_code=True` would run it"
    return (
        "a Python file that no auto_map names (config.json read): "
        "`trust_remote_code=True` runs it only if a module an auto_map names imports it"
    )


def listed_kind(name: str) -> tuple[str, str | None]:
    """(kind, warning or None) of a file known by its name alone, as in a
    repository listing: nothing of it is read, so a .bin file is only
    "pickle or raw weights"."""
    low = os.path.basename(name).lower()
    if low.endswith(PICKLE_NAMES):
        return "pickle", "a pickle by its name: loading it can run arbitrary code"
    if low.endswith(".bin"):
        return "pickle or raw weights", "a .bin file (a pickle when torch.save wrote it): loading it can run code"
    kind = name_kind(low) or "other"
    return kind, LISTED_CODE if kind == "Python" else None


def safetensors_copy(name: str, siblings: Collection[str]) -> str | None:
    """The sibling that holds a pickle's weights as safetensors, or None.

    ``pytorch_model[.variant][-0000k-of-0000n].bin`` pairs with
    ``model[.variant].safetensors``, its shards or its index; any other
    ``STEM.pt`` (``.bin``, ``.ckpt``, ...) with ``STEM.safetensors`` and its
    shards or index, as transformers, diffusers and peft name them.
    """
    stem = _SHARD.sub("", os.path.splitext(os.path.basename(name))[0])
    stems = {stem}
    if stem.startswith("pytorch_model"):
        stems.add("model" + stem[len("pytorch_model") :])
    for s in sorted(stems):
        head, _, variant = s.partition(".")
        exact = {f"{s}.safetensors", f"{s}.safetensors.index.json"}
        if variant:
            exact.add(f"{head}.safetensors.index.{variant}.json")
        for sibling in sorted(siblings):
            if sibling in exact:
                return sibling
            if sibling.endswith(".safetensors") and _SHARD.sub("", sibling[: -len(".safetensors")]) == s:
                return sibling
    return None


def pickle_json(verdict: PickleVerdict) -> dict[str, Any]:
    """A pickle's static reading as reports carry it: its container, whether
    it is weights-only, and every global it imports (with what would run)."""
    return {
        "container": verdict.kind,
        "weights_only": verdict.weights_only,
        "torch_weights_only": verdict.torch_weights_only,
        "problem": verdict.problem,
        "imports": [
            {
                "global": f"{g.module}.{g.name}",
                "called": g.called,
                "offset": g.offset,
                "member": g.member,
                "allowed": g.reason is None,
                "reason": g.reason,
            }
            for g in verdict.imports
        ],
    }


def pickle_advice(name: str, siblings: Collection[str]) -> str:
    """What to do about a pickle named ``name`` among ``siblings`` (its
    folder's names), for a folder, a hub cache and an hf:// listing alike."""
    copy = safetensors_copy(name, siblings)
    if copy is not None:
        return f"; a safetensors copy is here ({copy}): use it (load with use_safetensors=True), not this file"
    return "; do not load it unless you trust its source, and prefer a safetensors copy"


def count_kinds(kinds: Iterable[str]) -> dict[str, int]:
    """Files per kind, most common first (then by name)."""
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def kinds_line(counts: dict[str, int], what: str = "other file") -> str:
    """``3 other files: 2 JSON, 1 tokenizer``, or "" when there are none."""
    total = sum(counts.values())
    if not total:
        return ""
    parts = ", ".join(f"{n} {kind}" for kind, n in counts.items())
    return f"{total} {what}{'s' if total != 1 else ''}: {parts}"


def classify(path: str, siblings: Collection[str]) -> Other:
    """The kind and findings of one regular file found in a folder.

    ``siblings`` are the names in the file's folder (for the safetensors-copy
    note).  The file is judged by the loaders' dispatch (validator.formats):
    a pickle when a loader would unpickle it or its name says so, read
    statically by validator.pickles.  Raises SourceError when the file cannot
    be opened.
    """
    with RegularFile(path) as (fd, st):
        try:
            head = read_exact(fd, 0, SNIFF_LEN)
            identified = identify(head, st.st_size) if head else None
            judged = _judge(fd, st.st_size, path)
        except OSError as exc:
            raise os_error(path, exc) from exc
    name = os.path.basename(path)
    out = Checker()
    for what in judged.unread:
        out.add("archive-unreadable", f"{what}: check it before unpacking or loading it", None)
    for member in judged.escapes:
        out.add("archive-member-escapes", f"member {member!r} is written outside the folder it is unpacked into", None)
    lfs = identified is not None and identified.slug == "file-is-git-lfs-pointer"
    if judged.pickle and not lfs:  # a pointer to the file is no pickle, whatever its name
        from validator.pickles import read_pickle_file  # noqa: PLC0415 - the reader loads only for a pickle

        return _pickle_other(path, st.st_size, read_pickle_file(path), siblings, out)
    slug = identified.slug if identified is not None else None
    kind = name_kind(name)
    if kind == "Python":
        out.add("custom-code", custom_code_message(name, auto_mapped(os.path.dirname(path) or ".")), None)
    if kind is None:
        kind = "empty" if st.st_size == 0 else _BY_CONTENT.get(slug or "", "other")
    if kind in {"HDF5", "ONNX"}:
        _code_in_model(path, kind, out)
    return Other(path, kind, st.st_size, tuple(out.findings))


def _pickle_other(path: str, size: int, verdict: PickleVerdict, siblings: Collection[str], out: Checker) -> Other:
    name = os.path.basename(path)
    what = _what(verdict, name)
    if verdict.weights_only:
        copy = safetensors_copy(name, siblings)
        note = f"; a safetensors copy is here ({copy}): prefer it" if copy is not None else ""
        out.add("pickle-weights-only", f"{what}: {verdict.message()}{note}", None)
    else:
        slug = "pickle-data-only" if verdict.data_only else "pickle-file"
        out.add(slug, f"{what}: {verdict.message()}{pickle_advice(name, siblings)}", None)
    return Other(path, "pickle", size, tuple(out.findings), pickle_json(verdict))


def classify_bytes(data: bytes, name: str) -> Other | None:
    """What classify says of a file, for bytes that came without one (standard
    input, shown as ``name``), when a loader would unpickle them; else None."""
    from validator.formats import judge  # noqa: PLC0415 - as _judge
    from validator.pickles import read_pickle_bytes  # noqa: PLC0415 - as classify

    if not judge(data, name).pickle:
        return None
    return _pickle_other(name, len(data), read_pickle_bytes(data, name=name), (), Checker())


def lone_file(path: str) -> Other | None:
    """A file argument judged as a folder's file is (pickle-file, pickle-weights-only),
    when its name is not ``*.safetensors``, its first bytes are no safetensors
    length prefix and some loader would unpickle it; else None (it is
    validated as a safetensors file, and a foreign format is named there)."""
    if path.lower().endswith(".safetensors"):
        return None
    try:
        with RegularFile(path) as (fd, st):
            prefix = read_exact(fd, 0, PREFIX_LEN)
        if prefix_rule(prefix, st.st_size) is None:
            return None
        folder = os.path.dirname(path) or "."
        siblings = frozenset(os.listdir(folder))
        other = classify(path, siblings)
    except (OSError, SourceError):
        return None  # the read of the file reports it
    return other if other.kind == "pickle" else None


# The verdict's container -> what the finding says the file is.
_WHAT: Final = {
    "torch-zip": "this is a PyTorch checkpoint (the ZIP archive torch.save writes, with a pickle inside)",
    "torch-legacy": "this is a legacy PyTorch checkpoint (a pickle written by torch.save)",
    "torch-tar": "this is a legacy PyTorch tar checkpoint (torch.load unpickles its members)",
    "npy": "this NumPy file holds object arrays, which numpy.load unpickles (allow_pickle=True)",
    "npz": "this NumPy file holds object arrays, which numpy.load unpickles (allow_pickle=True)",
    "joblib": "this is a joblib file (joblib.load unpickles it)",
}


def _what(verdict: PickleVerdict, name: str) -> str:
    from validator.formats import pickle_name  # noqa: PLC0415 - as _judge

    known = _WHAT.get(verdict.kind)
    if known is not None:
        return known
    if verdict.problem is not None and not verdict.imports and pickle_name(name):
        ext = os.path.splitext(name.lower())[1]
        return f"a {ext} file is a pickle by convention (torch.load, joblib.load unpickle it)"
    return "this is a Python pickle (pickle.load, torch.load, numpy.load and joblib.load unpickle it)"


def _judge(fd: int, size: int, path: str) -> Judged:
    from validator.formats import judge  # noqa: PLC0415 - the dispatch loads only for a folder's other files

    if size == 0:
        return judge(b"", path)
    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
        if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_RANDOM"):
            mapped.madvise(mmap.MADV_RANDOM)  # headers and pickles only: no read-around of tensor bytes
        return judge(mapped, path)


def _code_in_model(path: str, kind: str, out: Checker) -> None:
    """A Keras Lambda layer, or ONNX external data outside the folder (validator.sources.codeformats)."""
    from validator.sources import codeformats  # noqa: PLC0415 - only for Keras and ONNX files

    if kind == "HDF5":
        for layer in codeformats.keras_lambda_layers(path) or ():
            out.add(
                "keras-lambda-layer",
                f"Lambda layer {layer!r}: keras.models.load_model runs its marshalled bytecode "
                "(unless loaded with safe_mode=True)",
                None,
            )
    elif path.lower().endswith(".onnx"):
        for location in codeformats.onnx_outside_locations(path) or ():
            out.add(
                "onnx-external-data-outside",
                f"external data location {location!r} leaves the model's folder: onnxruntime would read it",
                None,
            )
