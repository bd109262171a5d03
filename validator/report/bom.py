# Strategy: `stcheck scan --format cyclonedx`, a CycloneDX 1.6 JSON ML-BOM of
# what was vetted, built with cyclonedx-python-lib (the `sbom` extra,
# imported only here and only for this format).  One `machine-learning-model`
# component per model: a folder given on the command line, a hub-cache
# snapshot, an `hf://` folder at its commit, or a lone file; inside it one
# `file` component per file, with its SHA-256 when the scan read the whole
# file (`--format cyclonedx` makes a local scan do so, in the one read a deep
# scan uses; a remote file's header alone is read, so it has none and says
# so).  stcheck's verdicts travel as properties in the `stcheck:` namespace
# (CycloneDX property taxonomy: a tool's own prefix): the verdict, the
# profile, the rule ids found, tensor and parameter counts, the dtypes and
# the model signature's status.  `mime_type` is never set: in
# cyclonedx-python-lib 11.x it makes the BOM fail the 1.6 schema.
# Hostile file names are escaped as in the JSON report (validator._display).
#
# The models are built here from the results (``models``): a result below
# a folder argument (``sources``, the arguments as given) belongs to that
# folder; one in a hub-cache snapshot or a remote folder read at a commit
# (``org/name@rev/...``) to its snapshot; anything else is a model of its
# own.  A model's signature status is that of the signature record
# (FileResult.signature) that names the model.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH117, PTH119, PTH206
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from validator._display import encodable, escape_line, escape_path
from validator._rules import Severity
from validator._version import __version__
from validator.io.names import hub_snapshot
from validator.sources.schemes import is_remote

if TYPE_CHECKING:
    from collections.abc import Sequence

    from validator.report.results import FileResult

__all__ = ["NO_DIGEST", "ModelGroup", "build_bom", "model_name", "models", "snapshot_prefix", "write_bom"]

NO_DIGEST = "unknown: only the header was read (a remote file); download it and scan the copy"


@dataclass
class ModelGroup:
    """One model of the BOM and the results of its files."""

    name: str
    path: str  # the folder, snapshot, hf:// folder or file it stands for
    files: list[tuple[str, FileResult]] = field(default_factory=list)  # (name inside the model, result)
    signature: str = "none"  # the record's status (validator.pipeline.signatures._model.Status)
    signature_detail: str | None = None


def snapshot_prefix(display: str) -> str | None:
    """The folder prefix of a hub-cache file (``.../models--org--name/
    snapshots/REV/``, as the hub-cache scan names its files) or of a remote
    display name at a revision (``org/name@rev/``), or None."""
    snapshot = hub_snapshot(display)
    if snapshot is not None:
        return snapshot.prefix
    at = display.find("@")
    slash = display.find("/", at) if at >= 0 else -1
    return display[: slash + 1] if slash >= 0 else None


def model_name(prefix: str, repo: str | None) -> str:
    """A snapshot's name in a BOM: ``org/name@revision`` (12 hex digits)
    for a hub-cache snapshot, else the prefix itself."""
    folder = prefix.rstrip("/")
    if repo is None or "/snapshots/" not in folder:
        return folder
    return f"{repo}@{os.path.basename(folder)[:12]}"


def _folder_of(result: FileResult, roots: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The folder argument ``result`` lies below, and its path inside it."""
    if result.model is not None or is_remote(result.path):
        return None
    path = os.path.abspath(result.path)
    for given, root in roots:
        rel = os.path.relpath(path, root)
        if rel not in {".", os.curdir} and rel.split(os.sep)[0] != os.pardir and not os.path.isabs(rel):
            return given, rel.replace(os.sep, "/")
    return None


def models(results: Sequence[FileResult], sources: Sequence[str] = ()) -> list[ModelGroup]:
    """The results grouped into the BOM's models, in order of first appearance."""
    roots = [(s, os.path.abspath(s)) for s in sources if not is_remote(s)]
    signed = {r.signature["model"]: r.signature for r in results if r.signature is not None}
    remote = [name for name in signed if is_remote(name)]  # a remote folder's signature names it by its prefix
    groups: dict[str, ModelGroup] = {}
    for r in results:
        folder = _folder_of(r, roots)
        listed = next((name for name in remote if r.path.startswith(name + "/")), None)
        if folder is not None:
            key, inner = folder
            name = key
        elif listed is not None:
            key, name, inner = listed, listed, r.path[len(listed) + 1 :]
        elif (prefix := snapshot_prefix(r.path)) is not None and (r.model is not None or is_remote(r.path)):
            key, name, inner = prefix, model_name(prefix, r.model), r.path[len(prefix) :]
        elif r.path in signed:  # a single file given with its signature: named as given
            key, name, inner = r.path, r.path, os.path.basename(r.path)
        else:
            key, name, inner = r.path, os.path.basename(r.path) or r.path, r.path
        group = groups.get(key)
        if group is None:
            group = groups[key] = ModelGroup(name, key)
            record = signed.get(name)
            if record is not None:
                group.signature, group.signature_detail = record["status"], record["detail"]
        group.files.append((inner, r))
    return list(groups.values())


def _text(s: str) -> str:
    return s if encodable(s) else escape_line(s)


def _name(s: str) -> str:
    return s if encodable(s) else escape_path(s)


def _verdict(results: Sequence[FileResult]) -> str:
    if any(r.error is not None for r in results):
        return "unreadable"
    return "valid" if all(r.valid for r in results) else "invalid"


def _rules(results: Sequence[FileResult]) -> str:
    codes = {f"{i.finding.code} {i.finding.slug}" for r in results for i in r.active}
    return ", ".join(sorted(codes))


def _model_properties(group: ModelGroup, profile: str) -> list[tuple[str, str]]:
    results = [r for _, r in group.files]
    tensors = [r for r in results if r.kind == "safetensors"]
    dtypes: dict[str, int] = {}
    for r in tensors:
        for dtype, (_, params) in (r.dtypes or {}).items():
            dtypes[dtype] = dtypes.get(dtype, 0) + params
    props = [
        ("stcheck:path", _name(group.path)),
        ("stcheck:verdict", _verdict(results)),
        ("stcheck:profile", profile),
        ("stcheck:files", str(sum(r.kind not in {"link", "missing"} for r in results))),
        ("stcheck:tensor_count", str(sum(r.tensor_count or 0 for r in tensors))),
        ("stcheck:parameter_count", str(sum(dtypes.values()))),
        ("stcheck:errors", str(sum(i.severity is Severity.ERROR for r in results for i in r.active))),
        ("stcheck:warnings", str(sum(i.severity is Severity.WARNING for r in results for i in r.active))),
        ("stcheck:signature", group.signature),
    ]
    if dtypes:
        props.append(("stcheck:dtypes", ", ".join(f"{d}={n}" for d, n in sorted(dtypes.items()))))
    if group.signature_detail:
        props.append(("stcheck:signature_detail", _text(group.signature_detail)))
    if rules := _rules(results):
        props.append(("stcheck:rules", rules))
    return props


def _file_properties(r: FileResult) -> list[tuple[str, str]]:
    kind = r.kind if r.file_kind is None else f"{r.kind} ({r.file_kind})"
    props = [("stcheck:kind", kind), ("stcheck:verdict", _verdict([r]))]
    if r.file_size is not None:
        props.append(("stcheck:size", str(r.file_size)))
    if r.kind == "safetensors" and r.tensor_count is not None:
        props.append(("stcheck:tensor_count", str(r.tensor_count)))
        params = sum(p for _, p in (r.dtypes or {}).values())
        props.append(("stcheck:parameter_count", str(params)))
        if r.dtypes:
            props.append(("stcheck:dtypes", ", ".join(sorted(r.dtypes))))
    if rules := _rules([r]):
        props.append(("stcheck:rules", rules))
    if r.sha256 is None:
        props.append(("stcheck:sha256", NO_DIGEST if is_remote(r.path) else "not read"))
    return props


def build_bom(groups: Sequence[ModelGroup], errors: Sequence[str], *, profile: str, policies: Sequence[str]) -> Any:  # noqa: ANN401 - a cyclonedx.model.bom.Bom
    """The BOM of ``groups`` (cyclonedx-python-lib objects)."""
    from cyclonedx.model import HashAlgorithm, HashType, Property  # noqa: PLC0415 - the sbom extra loads only for this format
    from cyclonedx.model.bom import Bom  # noqa: PLC0415 - as above
    from cyclonedx.model.component import Component, ComponentType  # noqa: PLC0415 - as above

    def props(pairs: list[tuple[str, str]]) -> list[Any]:
        return [Property(name=k, value=v) for k, v in pairs]

    bom = Bom()
    bom.metadata.tools.components.add(Component(type=ComponentType.APPLICATION, name="stcheck", version=__version__))
    bom.metadata.properties.update(props([("stcheck:policy", _text(p)) for p in policies]))
    bom.metadata.properties.update(props([("stcheck:unreadable", _text(e)) for e in errors]))
    for i, group in enumerate(groups, 1):
        model = Component(
            type=ComponentType.MACHINE_LEARNING_MODEL,
            name=_name(group.name),
            bom_ref=f"model-{i}",
            properties=props(_model_properties(group, profile)),
        )
        for j, (name, r) in enumerate(group.files, 1):
            if r.kind in {"link", "missing"}:  # no bytes of its own: its finding is in the model's rules
                continue
            hashes = [] if r.sha256 is None else [HashType(alg=HashAlgorithm.SHA_256, content=r.sha256)]
            model.components.add(
                Component(
                    type=ComponentType.FILE,
                    name=_name(name),
                    bom_ref=f"model-{i}-file-{j}",
                    hashes=hashes,
                    properties=props(_file_properties(r)),
                )
            )
        bom.components.add(model)
    return bom


def write_bom(
    out: IO[str], groups: Sequence[ModelGroup], errors: Sequence[str], *, profile: str, policies: Sequence[str] = ()
) -> None:
    """Write the CycloneDX 1.6 JSON BOM of ``groups`` to ``out``."""
    from cyclonedx.output.json import JsonV1Dot6  # noqa: PLC0415 - the sbom extra loads only for this format

    bom = build_bom(groups, errors, profile=profile, policies=policies)
    out.write(JsonV1Dot6(bom).output_as_string(indent=2) + "\n")
