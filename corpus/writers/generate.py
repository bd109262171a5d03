# Strategy: rebuild corpus/writers/, the files that real writers produce.
#
# Each writer runs in a virtual environment of its own, made OUTSIDE the
# repository (default ~/.cache/stcheck-writers, or --venvs DIR) and filled
# with pip from the package index; torch is only ever the CPU wheel
# `torch==2.13.0`, passed as a constraint so that no other package pulls
# another build.  Old safetensors releases are installed with
# `pip install --target`.  A job is one writer at one version: it runs
# _write.py inside its environment, which builds tiny models from configs
# (random init, fixed seeds: nothing is downloaded from a hub), saves them the
# way the writer's users do, and loads them back with the writer's own
# loader.  Then _probe.py, in a separate "loaders" environment, measures what
# stcheck is judged against: whether safetensors 0.8.0 reads each file, what
# the other installable loaders (mlx, tinygrad, gguf, huggingface_hub, torch)
# make of it, and which disputed constructs it contains.  The measurements
# are independent of stcheck (stdlib json and struct, and the loaders
# themselves): the corpus is evidence about stcheck, not its output.
#
# This script is NOT part of CI and no test runs it.  It is rerunnable per
# job (`--only transformers-4.30.2`); the manifest keeps the other jobs'
# entries.
#
#   python corpus/writers/generate.py --list
#   python corpus/writers/generate.py                          # every job
#   python corpus/writers/generate.py --only mlx-0.32.4 --venvs /tmp/venvs
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MANIFEST = HERE / "manifest.json"
TORCH = "torch==2.13.0"  # the CPU wheel on local disk: any other spec downloads GBs of CUDA

# Environment for every job: offline from the hub, CPU only, reproducible.
BASE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "CUDA_VISIBLE_DEVICES": "",
    "JAX_PLATFORMS": "cpu",
    "KERAS_BACKEND": "jax",
    "DEV": "CPU",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONWARNINGS": "ignore",
}


@dataclass(frozen=True)
class Env:
    """A virtual environment: pip requirements, plus --target installs."""

    name: str
    requirements: tuple[str, ...]
    targets: tuple[str, ...] = ()  # e.g. "safetensors==0.3.3" -> DIR/targets/safetensors-0.3.3


@dataclass(frozen=True)
class Job:
    """One writer at one version, run by _write.py in an environment."""

    name: str  # also the output folder under corpus/writers/
    env: str
    writer: str
    packages: tuple[str, ...]  # distributions whose versions the manifest records
    target: str | None = None  # a --target dir of the env put first on sys.path
    extra_env: dict[str, str] = field(default_factory=dict)
    writes: bool = True  # False: a cross-loading job, which reads the other jobs' outputs


_ST_OLD = ("safetensors==0.3.3", "safetensors==0.4.5", "safetensors==0.8.0")

ENVS = {
    env.name: env
    for env in (
        Env(
            "loaders",
            ("safetensors==0.8.0", "numpy", "mlx[cpu]==0.32.4", "tinygrad", "gguf", "pyyaml", "huggingface_hub", TORCH),
        ),
        Env("frameworks", ("numpy", TORCH, "jax[cpu]"), _ST_OLD),
        Env("paddle", ("numpy", "paddlepaddle"), _ST_OLD),
        Env("transformers-4.30.2", (TORCH, "transformers==4.30.2", "numpy<2")),
        Env("transformers-4.36.2", (TORCH, "transformers==4.36.2", "numpy<2")),
        Env(
            "hf-current",
            (
                TORCH,
                "transformers==5.24.0",
                "diffusers",
                "peft",
                "accelerate",
                "sentence-transformers",
                "optimum-quanto",
                "huggingface_hub",
            ),
        ),
        Env("mlx", ("mlx[cpu]==0.32.4", "mlx-lm")),
        Env("tinygrad", ("tinygrad", "numpy")),
        Env(
            "keras", ("keras-hub", "keras", "jax[cpu]", TORCH, "safetensors")
        ),  # keras-hub does not require safetensors
    )
}

_ST = ("safetensors", "numpy")
JOBS = {
    job.name: job
    for job in (
        *(
            Job(f"safetensors-{v}", "frameworks", "safetensors", (*_ST, "torch", "jax"), target=f"safetensors-{v}")
            for v in ("0.3.3", "0.4.5", "0.8.0")
        ),
        *(
            Job(f"safetensors-{v}-paddle", "paddle", "safetensors", (*_ST, "paddlepaddle"), target=f"safetensors-{v}")
            for v in ("0.3.3", "0.4.5", "0.8.0")
        ),
        *(
            Job(f"transformers-{v}", f"transformers-{v}", "transformers", ("transformers", "torch", "safetensors"))
            for v in ("4.30.2", "4.36.2")
        ),
        Job("transformers-5.24.0", "hf-current", "transformers", ("transformers", "torch", "safetensors")),
        Job("diffusers", "hf-current", "diffusers", ("diffusers", "torch", "safetensors")),
        Job("huggingface_hub", "hf-current", "huggingface_hub", ("huggingface_hub", "torch", "safetensors")),
        Job("peft", "hf-current", "peft", ("peft", "transformers", "torch", "safetensors")),
        Job("accelerate", "hf-current", "accelerate", ("accelerate", "torch", "safetensors")),
        Job(
            "sentence-transformers",
            "hf-current",
            "sentence-transformers",
            ("sentence-transformers", "transformers", "torch", "safetensors"),
        ),
        Job("optimum-quanto", "hf-current", "optimum-quanto", ("optimum-quanto", "torch", "safetensors")),
        Job("mlx", "mlx", "mlx", ("mlx",)),
        Job("mlx-lm", "mlx", "mlx-lm", ("mlx-lm", "mlx")),
        Job("tinygrad", "tinygrad", "tinygrad", ("tinygrad", "numpy"), extra_env={"DEV": "CPU"}),  # needs clang (apt)
        *(
            Job(
                f"keras-hub-{b}",
                "keras",
                "keras-hub",
                ("keras-hub", "keras", b, "safetensors"),
                extra_env={"KERAS_BACKEND": b},
            )
            for b in ("jax", "torch")
        ),
        # last: they read the outputs of the jobs above
        *(
            Job(
                f"crossload-transformers-{v}", e, "transformers", ("transformers", "torch", "safetensors"), writes=False
            )
            for v, e in (("4.30.2", "transformers-4.30.2"), ("4.36.2", "transformers-4.36.2"), ("5.24.0", "hf-current"))
        ),
    )
}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _spec_digest(env: Env) -> str:
    return hashlib.sha256(json.dumps([env.requirements, env.targets]).encode()).hexdigest()[:16]


def _pip(python: Path, args: list[str], constraints: Path, logfile: Path) -> None:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-c", str(constraints), *args]
    log(f"  $ {' '.join(cmd)}")
    with logfile.open("a", encoding="utf-8") as out:
        subprocess.run(cmd, check=True, stdout=out, stderr=subprocess.STDOUT)


def ensure_env(env: Env, venvs: Path) -> Path:
    """Create (or reuse) the environment; return its directory."""
    root = venvs / env.name
    marker = root / ".stcheck-writers"
    digest = _spec_digest(env)
    if marker.is_file() and marker.read_text(encoding="utf-8") == digest:
        return root
    log(f"environment {env.name}: installing {', '.join(env.requirements)}")
    if root.exists():
        shutil.rmtree(root)
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
    python = root / "bin" / "python"
    constraints = root / "constraints.txt"
    constraints.write_text(f"{TORCH}\n", encoding="utf-8")
    logfile = root / "install.log"
    _pip(python, list(env.requirements), constraints, logfile)
    for spec in env.targets:
        name, _, version = spec.partition("==")
        _pip(python, ["--no-deps", "--target", str(root / "targets" / f"{name}-{version}"), spec], constraints, logfile)
    marker.write_text(digest, encoding="utf-8")
    return root


def _run_env(
    root: Path, target: str | None = None, extra: dict[str, str] | None = None, *, repo: bool = False
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(BASE_ENV)
    env["HF_HOME"] = str(root / "hf-home")  # an empty, private cache: nothing to find offline
    env["XDG_CACHE_HOME"] = str(root / "cache")
    env["VIRTUAL_ENV"] = str(root)
    env["PATH"] = f"{root / 'bin'}:{env.get('PATH', '')}"
    paths = [str(root / "targets" / target)] if target else []
    if repo:  # the probe runs the conformance adapters, which import validator.conformance
        paths.append(str(REPO))
    env["PYTHONPATH"] = ":".join(paths)
    env.update(extra or {})
    return env


def run_job(job: Job, venvs: Path) -> dict[str, Any]:
    """Write the job's outputs into corpus/writers/JOB and return its records.

    The job writes into a staging folder beside the environments, which
    replaces corpus/writers/JOB only when the job succeeded: a failed or
    interrupted job leaves the previous outputs (and their manifest
    entries) as they were.
    """
    root = ensure_env(ENVS[job.env], venvs)
    final = HERE / job.name
    out = venvs / ".staging" / job.name if job.writes else HERE
    if job.writes:
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="stcheck-writers-") as tmp:
        records = Path(tmp) / "records.json"
        cmd = [str(root / "bin" / "python"), str(HERE / "_write.py"), job.name, str(out), str(records)]
        for package in job.packages:
            cmd += ["--package", package]
        log(f"job {job.name}: writing")
        subprocess.run(cmd, check=True, cwd=tmp, env=_run_env(root, job.target, job.extra_env))
        result: dict[str, Any] = json.loads(records.read_text(encoding="utf-8"))
    if job.writes:
        for junk in list(out.rglob("__pycache__")):
            shutil.rmtree(junk)
        if final.exists():
            shutil.rmtree(final)
        shutil.move(out, final)
    return result


def probe(paths: list[str], venvs: Path) -> dict[str, Any]:
    """Facts about files and indexes, measured in the loaders environment."""
    root = ensure_env(ENVS["loaders"], venvs)
    with tempfile.TemporaryDirectory(prefix="stcheck-writers-probe-") as tmp:
        request, answer = Path(tmp) / "paths.json", Path(tmp) / "facts.json"
        request.write_text(json.dumps(paths), encoding="utf-8")
        cmd = [str(root / "bin" / "python"), str(HERE / "_probe.py"), str(HERE), str(request), str(answer)]
        subprocess.run(cmd, check=True, cwd=tmp, env=_run_env(root, repo=True))
        facts: dict[str, Any] = json.loads(answer.read_text(encoding="utf-8"))
    return facts


def _expect(entry: dict[str, Any]) -> dict[str, Any]:
    """The verdicts issue 20 prescribes, from the measured facts.

    A file: reference valid exactly when safetensors 0.8.0 reads it; strict
    reports no error when 0.8.0 and the writer's loader both read it.  A
    folder or index: no error when the writer's loader loads it and no
    pickle is in it; an error otherwise (the same in both profiles: an index
    or a folder is something 0.8.0 never reads).
    """
    loads = entry["loader"]["loads"]
    rules = entry.get("error_rules", [])
    if entry["kind"] == "file":
        st = entry["facts"]["safetensors_0_8_0"]["reads"]
        # 0.8.0 refuses it: an error in both profiles.  Both read it: no error
        # in strict.  0.8.0 reads it but the writer's loader does not: the
        # issue's rule decides nothing (None: not pinned by the tests).
        strict = (True if loads else None) if st else False
        return {"reference": {"valid": st}, "strict": {"valid": strict, "error_rules": rules}}
    clean = None if loads is None else bool(loads) and not entry["facts"].get("pickles")
    verdict: dict[str, Any] = {"valid": clean, "error_rules": rules}
    if entry.get("error_mentions"):  # names the errors must mention (the pickles in a folder)
        verdict["error_mentions"] = entry["error_mentions"]
    return {"reference": dict(verdict), "strict": dict(verdict)}


def _keep_cross_facts(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Keep what the crossload jobs measured on a target whose bytes did not change."""
    before, after = old.get("facts", {}), new["facts"]
    if new["kind"] == "file" and before.get("sha256") == after.get("sha256"):
        for name, result in before.get("loaders", {}).items():
            if name.startswith("transformers-"):
                after["loaders"].setdefault(name, result)
    if new["kind"] == "folder" and old.get("contents") == new.get("contents") and "cross_loads" in before:
        after.setdefault("cross_loads", before["cross_loads"])


def merge(results: list[dict[str, Any]], facts: dict[str, Any]) -> dict[str, Any]:
    """The manifest with these jobs' entries replaced."""
    manifest: dict[str, Any] = {"targets": []}
    if MANIFEST.is_file():
        manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    done = {r["job"] for r in results if not r.get("failed")}  # a failed job keeps its previous entries
    previous = {t["path"]: t for t in manifest.get("targets", [])}
    curated = {p: t["known_wrong_on_main"] for p, t in previous.items() if "known_wrong_on_main" in t}
    targets = [t for t in manifest.get("targets", []) if t["job"] not in done]
    cross = [r for result in results for r in result["records"] if r["kind"] == "cross"]
    for result in results:
        for record in result["records"]:
            if record["kind"] == "cross":
                continue
            path = f"{result['job']}/{record.pop('path')}"
            entry: dict[str, Any] = {"path": path, "job": result["job"], **record}
            entry["writer"] = {"name": result["writer"], "version": result["versions"].get(result["writer"])}
            entry["packages"] = result["versions"]
            entry["facts"] = {**facts.get(path, {}), **record.get("facts", {})}
            entry["expect"] = _expect(entry)
            entry.pop("error_rules", None)
            entry.pop("error_mentions", None)
            if path in curated:  # curated by hand (the xfail list): kept across regenerations
                entry["known_wrong_on_main"] = curated[path]
            if path in previous:
                _keep_cross_facts(previous[path], entry)
            targets.append(entry)
    by_path = {t["path"]: t for t in targets}
    for record in cross:  # another release's loader on a target: a fact about that target
        target = by_path.get(record["path"])
        if target is None:
            continue
        fact = record["fact"]
        if target["kind"] == "file":
            result = "accept" if fact["loads"] else "reject"
            target["facts"]["loaders"][record["loader_name"]] = {"result": result, "detail": fact["error"]}
        else:
            target["facts"].setdefault("cross_loads", {})[record["loader_name"]] = fact
    targets.sort(key=lambda t: t["path"])
    ran = {r["job"] for r in results}
    failures = [f for f in manifest.get("failed_jobs", []) if f["job"] not in ran]
    failures += [{"job": r["job"], "reason": r["failed"]} for r in results if r.get("failed")]
    return {
        "$schema": "./manifest.schema.json",
        "description": manifest.get("description", "Files, folders and indexes written by real writers; see README.md"),
        "failed_jobs": sorted(failures, key=lambda f: f["job"]),
        "targets": targets,
    }


def reprobe(venvs: Path) -> int:
    """Re-measure every target's facts (after a change to _probe.py), keeping the writers' records."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    targets = manifest["targets"]
    paths = [t["path"] + ("/" if t["kind"] == "folder" else "") for t in targets]
    log(f"probing {len(paths)} targets")
    facts = probe(paths, venvs)
    for target in targets:
        old, new = target["facts"], facts.get(target["path"], {})
        if "loaders" in new:  # keep the cross-loading jobs' entries
            new["loaders"] = {**old.get("loaders", {}), **new["loaders"]}
        target["facts"] = {**old, **new}
        strict = target["expect"]["strict"]
        kept = {k: strict[k] for k in ("error_rules", "error_mentions") if k in strict}
        target["expect"] = _expect({**target, **kept})
    MANIFEST.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote {MANIFEST.relative_to(REPO)}: {len(targets)} targets")
    return 0


def _probe_paths(result: dict[str, Any]) -> list[str]:
    paths = []
    for record in result["records"]:
        if record["kind"] == "cross":
            continue
        path = f"{result['job']}/{record['path']}"
        if record["kind"] in {"file", "index"}:
            paths.append(path)
        else:
            paths.append(path + "/")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rebuild corpus/writers/ with real writers (not part of CI).")
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "stcheck-writers")
    parser.add_argument("--only", action="append", choices=sorted(JOBS), help="run only this job (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the jobs and their environments")
    parser.add_argument("--keep-going", action="store_true", help="record a failing job and go on")
    parser.add_argument("--reprobe", action="store_true", help="only re-measure the facts of every listed target")
    args = parser.parse_args(argv)
    if args.list:
        for job in JOBS.values():
            print(f"{job.name:24} env={job.env:22} {' '.join(ENVS[job.env].requirements)}")
        return 0
    args.venvs.mkdir(parents=True, exist_ok=True)
    if args.reprobe:
        return reprobe(args.venvs)
    results = []
    for name in args.only or list(JOBS):
        job = JOBS[name]
        try:
            results.append(run_job(job, args.venvs))
        except subprocess.CalledProcessError as exc:
            step = "pip install" if "pip" in exc.cmd else "the writer script"
            reason = f"{step} exited {exc.returncode} (the output above, or the environment's install.log, says why)"
            log(f"job {name} failed: {reason}")
            if not args.keep_going:
                return 1
            results.append({"job": name, "writer": job.writer, "versions": {}, "records": [], "failed": reason})
    paths = [p for r in results for p in _probe_paths(r)]
    log(f"probing {len(paths)} targets")
    facts = probe(paths, args.venvs)
    manifest = merge(results, facts)
    MANIFEST.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote {MANIFEST.relative_to(REPO)}: {len(manifest['targets'])} targets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
