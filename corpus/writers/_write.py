# Strategy: the writer side of corpus/writers/generate.py, run INSIDE one
# writer's virtual environment as `python _write.py JOB OUTDIR RECORDS`.
#
# Every job builds tiny models from configs (random init under fixed seeds;
# nothing is downloaded), saves them with the writer's own call, then loads
# them back with the writer's own loader and compares every tensor with what
# was saved.  A load "succeeds" only when it returns without an exception AND
# hands back the saved values: a loader that silently initialises missing
# weights afresh does not count as reading the file.  The records (one per
# file, folder and index, with the exact call) go to RECORDS as JSON; the
# loaders environment measures the rest (_probe.py).
#
# Imports of the writers happen inside the job functions: each environment
# has only its own writers installed.  This file never imports stcheck.
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import traceback
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Out  # noqa: E402 - after the path that finds it
from _jobs_frameworks import job_mlx, job_mlx_lm, job_safetensors, job_safetensors_paddle, job_tinygrad  # noqa: E402
from _jobs_hf import (  # noqa: E402
    job_accelerate,
    job_diffusers,
    job_huggingface_hub,
    job_keras_hub,
    job_optimum_quanto,
    job_peft,
    job_sentence_transformers,
)
from _jobs_transformers import job_crossload, job_transformers  # noqa: E402

JOBS = {
    "safetensors": job_safetensors,
    "safetensors-paddle": job_safetensors_paddle,
    "transformers": job_transformers,
    "diffusers": job_diffusers,
    "huggingface_hub": job_huggingface_hub,
    "peft": job_peft,
    "accelerate": job_accelerate,
    "sentence-transformers": job_sentence_transformers,
    "optimum-quanto": job_optimum_quanto,
    "mlx": job_mlx,
    "mlx-lm": job_mlx_lm,
    "tinygrad": job_tinygrad,
    "keras-hub": job_keras_hub,
    "crossload": job_crossload,
}


def _kind(job: str) -> str:
    if job.startswith("safetensors-"):
        return "safetensors-paddle" if job.endswith("-paddle") else "safetensors"
    if job.startswith("transformers-"):
        return "transformers"
    if job.startswith("keras-hub-"):
        return "keras-hub"
    if job.startswith("crossload-"):
        return "crossload"
    return job


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("out", type=Path)
    parser.add_argument("records", type=Path)
    parser.add_argument("--package", action="append", default=[])
    args = parser.parse_args()
    os.chdir(args.out)
    out = Out(args.out)
    kind = _kind(args.job)
    try:
        JOBS[kind](out)
    except Exception:  # noqa: BLE001 - the job failed: say why, and exit 1 for generate.py to record
        traceback.print_exc()
        return 1
    versions = {package: _version(package) for package in args.package}
    if kind.startswith("safetensors"):
        import safetensors  # the --target copy: its metadata may be absent

        versions["safetensors"] = getattr(safetensors, "__version__", None) or versions.get("safetensors")
    versions["python"] = sys.version.split()[0]
    writer = kind.removesuffix("-paddle")
    result = {"job": args.job, "writer": writer, "versions": versions, "records": out.records}
    args.records.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
