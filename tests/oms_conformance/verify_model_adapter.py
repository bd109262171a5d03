#!/usr/bin/env python3
# Strategy: the adapter protocol of the OMS conformance suite (the
# model-signing-conformance repository: its adapter CLI protocol document)
# over `stcheck scan`, so the suite judges stcheck's verifier.  The suite
# itself stays outside this repository; README.md ("Signed models") says how
# to run it:
#
#   pytest test/ --entrypoint=/path/to/stcheck/tests/oms_conformance/verify_model_adapter.py --skip-sigstore
#
#   verify-model   runs `stcheck scan --format json` of --model-path (a folder
#                  or a single file) with --signature BUNDLE, the key or chain,
#                  and each --ignore-paths as --ignore-path.  It exits 0 when
#                  every signature record in the report has a signature that
#                  verifies and no unsuppressed ST8xx finding stands against
#                  the model; --ignore-unsigned-files is a policy that ignores
#                  unsigned-file (ST804), with that flag as the reason.  A
#                  model without a safetensors file is still verified (the
#                  scan's exit 2 for "nothing to scan" is about the format
#                  checks, not the signature).
#   sign-model     stcheck verifies and never signs: the suite's round trips
#                  are signed here by model_signing 1.1.1 itself (the
#                  reference signer, as `model_signing sign` signs: git paths
#                  and the signature ignored), then verified by stcheck.
#   sigstore       keyless signing and verification need the network (Fulcio,
#                  Rekor, the TUF root): exit 3, run the suite with --skip-sigstore.
# Exit codes: 0 success, 1 verification failed, 2 usage, 3 not supported here.
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
NOT_SUPPORTED = 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verify_model_adapter")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("sign-model", "verify-model"):
        p = sub.add_parser(name)
        p.add_argument("--method", required=True, choices=["key", "certificate", "sigstore"])
        p.add_argument("--model-path", required=True)
        p.add_argument("--ignore-paths", action="append", default=[])
        p.add_argument("--cert-chain", action="append", default=[])
        p.add_argument("--use-staging", action="store_true")
        if name == "sign-model":
            p.add_argument("--output-bundle", required=True)
            p.add_argument("--private-key")
            p.add_argument("--signing-cert")
            p.add_argument("--identity-token")
        else:
            p.add_argument("--bundle", required=True)
            p.add_argument("--public-key")
            p.add_argument("--ignore-unsigned-files", action="store_true")
            p.add_argument("--identity")
            p.add_argument("--identity-provider")
    return parser


def sign_model(args: argparse.Namespace) -> int:
    """Sign with the reference signer (stcheck only verifies)."""
    if args.method == "sigstore":
        print("sigstore signing needs the network: not supported here", file=sys.stderr)
        return NOT_SUPPORTED
    from model_signing import hashing, signing

    model = Path(args.model_path)
    bundle = Path(args.output_bundle)
    ignored = [Path(p) for p in args.ignore_paths]
    if model.is_dir():
        ignored.append(bundle.resolve())
    config = hashing.Config().set_ignored_paths(paths=ignored, ignore_git_paths=True)
    if not list(config.hash(model).resource_descriptors()):  # OMS 1.0 section 6.1: at least one file
        print(f"{model}: nothing to sign", file=sys.stderr)
        return 1
    signer = signing.Config().set_hashing_config(config)
    if args.method == "key":
        signer = signer.use_elliptic_key_signer(private_key=args.private_key)
    else:
        signer = signer.use_certificate_signer(
            private_key=args.private_key, signing_certificate=args.signing_cert, certificate_chain=args.cert_chain
        )
    signer.sign(model, bundle)
    return 0


def _scan_argv(args: argparse.Namespace, policy: Path | None) -> list[str]:
    argv = ["scan", "--format", "json", "--progress", "never", "-j", "1", "--signature", args.bundle]
    argv += ["--no-config"] if policy is None else ["--policy", str(policy)]
    if args.method == "key":
        argv += ["--public-key", args.public_key or ""]
    else:
        for cert in args.cert_chain:
            argv += ["--certificate-chain", cert]
    for path in args.ignore_paths:
        argv += ["--ignore-path", path]
    return [*argv, "--", args.model_path]


def verdict(doc: dict[str, object]) -> tuple[bool, str]:
    """Whether a scan's JSON report says the model's signature verified, and why not."""
    records = doc.get("signatures")
    if not isinstance(records, list) or not records:
        return False, "the report has no signature record"
    for record in records:
        if not record["signature_valid"]:
            return False, f"{record['status']}: {record['detail']}"
    files = doc.get("files")
    for entry in files if isinstance(files, list) else []:
        for finding in entry["findings"]:
            if finding["code"].startswith("ST8") and "suppression" not in finding:
                return False, f"{entry['path']}: {finding['code']} {finding['message']}"
    return True, "verified"


def verify_model(args: argparse.Namespace) -> int:
    if args.method == "sigstore":
        print("keyless (sigstore) verification needs the network: not supported here", file=sys.stderr)
        return NOT_SUPPORTED
    sys.path.insert(0, str(ROOT))
    from validator.cli.main import main

    with tempfile.TemporaryDirectory(prefix="stcheck-oms-") as tmp:
        policy = None
        if args.ignore_unsigned_files:
            policy = Path(tmp) / "policy.toml"
            policy.write_text('[rules.unsigned-file]\nignore = true\nreason = "--ignore-unsigned-files"\n')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(_scan_argv(args, policy))
    try:
        doc = json.loads(out.getvalue())
    except json.JSONDecodeError:
        print(f"stcheck scan exited {code} without a report", file=sys.stderr)
        return 1
    ok, why = verdict(doc)
    print(f"stcheck scan exited {code}: {why}", file=sys.stderr)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("NO_COLOR", "1")
    return sign_model(args) if args.command == "sign-model" else verify_model(args)


if __name__ == "__main__":
    sys.exit(main())
