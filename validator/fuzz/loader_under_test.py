# Strategy: "fuzz your loader".  A user's loader, a Python callable
# `module:function` or a command template, is run on each input and its
# outcome compared with our reference profile and with safetensors 0.8.0.
# Every disagreement is classified into a category (accepts-invalid:<rule>,
# crash:<exception>, rejects-valid, bytes-mismatch, tensor-set-mismatch,
# oracle-disagreement) and the shortest input seen for each category is
# kept in the output directory as a reproducer.  The target never raises
# for the loader's faults, so one campaign collects every category instead
# of stopping at the first; hangs and memory blow-ups are left to the
# engine's -timeout and -rss_limit_mb, and the runner files them as the
# categories `hang` and `out-of-memory`.
#
# Reject or crash: the one rule of validator/conformance/adapter.py
# (is_rejection), so a loader gets the same verdict here and in
# `stcheck conformance --impl`.  ValueError and its subclasses, StcheckError,
# SafetensorError, SafetensorsParsingError and the types named with
# --reject-exception are rejections; KeyError, IndexError, TypeError,
# struct.error, RecursionError and every other exception are crashes.
# ruff: noqa: PTH103, PTH105, PTH109, PTH112, PTH118, PTH123, PTH202, PTH208
# Paths: os.path and open(), like the rest of the package.
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Final

from validator._rejection import is_rejection
from validator._rules import Profile
from validator._validate import validate
from validator.fuzz.targets import numpy_representable, reference_load, tensor_bytes, tie_classes

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from validator._findings import Report

ENV_LOADER: Final = "STCHECK_FUZZ_LOADER"
ENV_LOADER_CMD: Final = "STCHECK_FUZZ_LOADER_CMD"
ENV_INPUT: Final = "STCHECK_FUZZ_LOADER_INPUT"
ENV_OUT: Final = "STCHECK_FUZZ_LOADER_OUT"
ENV_REJECT: Final = "STCHECK_FUZZ_LOADER_REJECT"
CMD_TIMEOUT_S: Final = 5.0  # below the engine's default -timeout of 10 s

# What each category means, for the report.
DESCRIPTIONS: Final = {
    "accepts-invalid": "accepts a file that safetensors 0.8.0 rejects",
    "rejects-valid": "rejects a file that safetensors 0.8.0 accepts",
    "crash": "raises something other than a clean rejection (a command: exits neither 0 nor 1)",
    "bytes-mismatch": "returns tensor bytes that differ from the file's declared range",
    "tensor-set-mismatch": "returns other tensor names than the header declares",
    "hang": "runs past the time limit",
    "out-of-memory": "exceeds the memory limit",
    "oracle-disagreement": "our reference profile and safetensors 0.8.0 disagree (a stcheck bug: please report it)",
}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the loader did with one input."""

    accepted: bool
    crashed: bool = False
    detail: str = ""
    tensors: Mapping[str, Any] | None = None


@dataclasses.dataclass
class LoaderUnderTest:
    """A user's loader: a callable or a command template with ``{path}``."""

    function: Callable[[Any], Any] | None = None
    command: str | None = None
    pass_bytes: bool = False
    clean: tuple[type[BaseException], ...] = ()  # documented rejection types beyond the default ones
    timeout_s: float = CMD_TIMEOUT_S

    def run(self, data: bytes) -> Outcome:
        with tempfile.TemporaryDirectory(prefix="stcheck-loader-") as tmp:
            path = os.path.join(tmp, "input.safetensors")
            if self.command is not None or not self.pass_bytes:
                with open(path, "wb") as f:
                    f.write(data)
            if self.command is not None:
                return self._run_command(path)
            return self._call(data if self.pass_bytes else path)

    def _run_command(self, path: str) -> Outcome:
        argv = shlex.split(self.command.replace("{path}", shlex.quote(path)))  # type: ignore[union-attr]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=self.timeout_s, check=False)  # noqa: S603 - the user asked for it
        except subprocess.TimeoutExpired:
            return Outcome(accepted=False, crashed=True, detail=f"hang: no exit within {self.timeout_s:g}s")
        if proc.returncode in (0, 1):
            return Outcome(accepted=proc.returncode == 0)
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return Outcome(accepted=False, crashed=True, detail=f"exit-{proc.returncode}: {tail[0][:200]}")

    def _call(self, arg: object) -> Outcome:
        assert self.function is not None
        try:
            value = self.function(arg)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - classifying the loader's failures is the point
            if is_rejection(exc, self.clean):
                return Outcome(accepted=False)
            return Outcome(accepted=False, crashed=True, detail=f"{_type_name(exc)}: {str(exc)[:200]}")
        tensors = value if hasattr(value, "keys") and hasattr(value, "__getitem__") else None
        return Outcome(accepted=True, tensors=tensors)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _import(spec: str) -> Any:  # noqa: ANN401 - whatever the user names
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        msg = f"{spec!r}: name a callable as module:function"
        raise ValueError(msg)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def from_env() -> LoaderUnderTest:
    """The loader named by the environment (set by `stcheck fuzz loader-under-test`)."""
    clean: tuple[type[BaseException], ...] = ()
    for name in filter(None, os.environ.get(ENV_REJECT, "").split(",")):
        clean = (*clean, _import(name))
    if os.environ.get(ENV_LOADER_CMD):
        return LoaderUnderTest(command=os.environ[ENV_LOADER_CMD], clean=clean)
    spec = os.environ.get(ENV_LOADER)
    if not spec:
        msg = f"set {ENV_LOADER}=module:function or {ENV_LOADER_CMD}='cmd {{path}}'"
        raise ValueError(msg)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return LoaderUnderTest(function=_import(spec), pass_bytes=os.environ.get(ENV_INPUT) == "bytes", clean=clean)


def _subkind(slug: str, message: str) -> str:
    if slug == "offsets-not-contiguous":
        return "offsets-not-contiguous(hole)" if "unindexed" in message else "offsets-not-contiguous(overlap)"
    return slug


def _representable(report: Report) -> bool:
    """False for a file whose zero-element tensor numpy cannot shape: refusing it is fine."""
    return all(numpy_representable(t.shape, t.bits) for t in (report.tensors or {}).values())


def classify(loader: LoaderUnderTest, data: bytes) -> list[tuple[str, str]]:
    """The (category, detail) pairs for one input; empty when the loader behaves."""
    ref = validate(data, profile=Profile.REFERENCE)
    theirs, _ = reference_load(data)
    found: list[tuple[str, str]] = []
    if theirs != ref.reference_error and not {theirs, ref.reference_error} <= tie_classes(ref):
        found.append(("oracle-disagreement", f"reference profile {ref.reference_error}, safetensors {theirs}"))
    outcome = loader.run(data)
    first = ref.first_error
    if outcome.crashed:
        kind = outcome.detail.split(":", 1)[0]
        found.append(("hang" if kind == "hang" else f"crash:{kind}", outcome.detail))
    elif outcome.accepted and first is not None:
        found.append((f"accepts-invalid:{_subkind(first.slug, first.message)}", first.format()))
    elif not outcome.accepted and ref.valid and _representable(ref):
        found.append(("rejects-valid", "the loader refuses a file safetensors accepts"))
    elif outcome.accepted and outcome.tensors is not None and ref.tensors is not None and ref.data_start is not None:
        if sorted(outcome.tensors) != sorted(ref.tensors):
            found.append(
                ("tensor-set-mismatch", f"loader {sorted(outcome.tensors)[:5]}, header {sorted(ref.tensors)[:5]}")
            )
        else:
            for name, info in ref.tensors.items():
                got = tensor_bytes(outcome.tensors[name])
                want = data[ref.data_start + info.begin : ref.data_start + info.end]
                if got != want:
                    found.append(
                        ("bytes-mismatch", f"tensor {name!r}: {len(got)} bytes returned, {len(want)} declared")
                    )
                    break
    return found


def category_file(category: str) -> str:
    """A file-name-safe form of a category."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", category).strip("_")


def record(out_dir: str, category: str, detail: str, data: bytes) -> None:
    """Keep ``data`` as the reproducer for ``category`` if it is the shortest so far."""
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, category_file(category))
    try:
        if os.path.getsize(base + ".safetensors") <= len(data):
            return
    except OSError:
        pass
    tmp = f"{base}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, base + ".safetensors")
    with open(base + ".json", "w", encoding="utf-8") as f:
        digest = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        json.dump({"category": category, "detail": detail, "size": len(data), "sha1": digest}, f)


def make_target(loader: LoaderUnderTest, out_dir: str) -> Callable[[bytes], None]:
    """The fuzz target: classify and record, never raise for the loader's faults."""

    def target(data: bytes) -> None:
        for category, detail in classify(loader, data):
            record(out_dir, category, detail, data)

    return target


def read_findings(out_dir: str) -> list[dict[str, Any]]:
    """The recorded categories with their reproducer paths, sorted."""
    found: list[dict[str, Any]] = []
    if not os.path.isdir(out_dir):
        return found
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".json"):
            with open(os.path.join(out_dir, name), encoding="utf-8") as f:
                entry = json.load(f)
            entry["path"] = os.path.join(out_dir, name[:-5] + ".safetensors")
            found.append(entry)
    return found
