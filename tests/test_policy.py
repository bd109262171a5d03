# Scan policies: limits, dtypes, required metadata, per-rule overrides and
# ignores (each with a reason), from a policy file or pyproject.toml.
from __future__ import annotations

import json

import pytest
from scan_fixtures import all_zero_file, build, clean_file, f32, f64_file, write

from validator.cli.main import main
from validator.config.policy import PolicyError, load_policy, parse_policy


def scan_json(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["scan", "--progress", "never", "--format", "json", *argv])
    out = capsys.readouterr().out
    return rc, json.loads(out) if out else {}


def policy_file(tmp_path, text: str):
    return write(tmp_path / "policy.toml", text.encode())


def test_policy_forbidding_f64_exact_findings(tmp_path, capsys):
    path = write(tmp_path / "f64.safetensors", f64_file())
    policy = policy_file(tmp_path, 'forbidden_dtypes = ["F64"]\n')
    rc, doc = scan_json(capsys, "--policy", str(policy), str(path))
    assert rc == 1
    assert doc["policy"] == str(policy)
    assert doc["files"][0]["findings"] == [
        {
            "rule": "policy-dtype-forbidden",
            "code": "ST611",
            "severity": "error",
            "offset": None,
            "tensor": "d",
            "json_path": "/d/dtype",
            "message": "tensor 'd' is F64, which the policy forbids",
        },
    ]


def test_allowed_dtypes_limits_and_required_metadata(tmp_path, capsys):
    data = build([("b", "F64", [1], bytes(8)), ("a", "F32", [1], f32(1.0)), ("c", "I8", [1], b"\x01")])
    path = write(tmp_path / "many.safetensors", data)
    policy = policy_file(
        tmp_path,
        'max_file_size = "100 B"\nmax_header_size = 16\nmax_tensors = 2\n'
        'allowed_dtypes = ["F32", "F16"]\nrequired_metadata = ["format", "license"]\n',
    )
    rc, doc = scan_json(capsys, "--policy", str(policy), str(path))
    assert rc == 1
    got = [(f["rule"], f["tensor"]) for f in doc["files"][0]["findings"]]
    assert got == [
        ("policy-file-too-large", None),
        ("policy-header-too-large", None),
        ("policy-too-many-tensors", None),
        ("policy-dtype-forbidden", "b"),
        ("policy-dtype-forbidden", "c"),
        ("policy-metadata-missing", None),
        ("policy-metadata-missing", None),
    ]
    messages = [f["message"] for f in doc["files"][0]["findings"]]
    assert messages[0] == f"file is {len(data)} bytes; the policy allows 100"
    assert messages[3] == "tensor 'b' is F64, which the policy does not allow"
    assert messages[5] == "metadata key 'format' is required by the policy but absent"


def test_a_file_within_the_policy_is_clean(tmp_path, capsys):
    path = write(tmp_path / "ok.safetensors", clean_file())
    policy = policy_file(
        tmp_path, 'max_file_size = "1 MiB"\nallowed_dtypes = ["F32"]\nrequired_metadata = ["format"]\n'
    )
    rc, doc = scan_json(capsys, "--policy", str(policy), str(path))
    assert rc == 0
    assert doc["files"][0]["findings"] == []


def test_severity_override_with_reason(tmp_path, capsys):
    path = write(tmp_path / "zero.safetensors", all_zero_file())
    policy = policy_file(
        tmp_path, '[rules.tensor-all-zero]\nseverity = "error"\nreason = "zeroed weights mean a broken export"\n'
    )
    rc, doc = scan_json(capsys, "--deep", "--policy", str(policy), str(path))
    assert rc == 1
    first = doc["files"][0]["findings"][0]
    assert (first["rule"], first["severity"], first["default_severity"]) == ("tensor-all-zero", "error", "warning")
    assert first["policy_reason"] == "zeroed weights mean a broken export"
    assert doc["files"][0]["valid"] is False


def _leading_space_file() -> bytes:
    # ST202 header-leading-bytes: a strict-only error; safetensors 0.8.0 accepts the file.
    body = clean_file()
    n = int.from_bytes(body[:8], "little")
    return (n + 8).to_bytes(8, "little") + b" " * 8 + body[8:]


def test_ignore_keeps_the_finding_marked_suppressed(tmp_path, capsys):
    # Issue 12 moved this test from ST406 (a file the reference rejects,
    # which a policy may no longer ignore) to ST202, which the reference accepts.
    path = write(tmp_path / "leading.safetensors", _leading_space_file())
    policy = policy_file(tmp_path, '[rules.ST202]\nignore = true\nreason = "our exporter indents; tracked in #12"\n')
    rc, doc = scan_json(capsys, "--policy", str(policy), str(path))
    assert rc == 0
    [finding] = doc["files"][0]["findings"]
    assert finding["rule"] == "header-leading-bytes"
    assert finding["suppression"] == {"reason": "our exporter indents; tracked in #12"}
    assert doc["summary"]["suppressed"] == 1
    assert doc["summary"]["errors"] == 0
    # Text output leaves suppressed findings out but counts them.
    rc = main(["scan", "--progress", "never", "--policy", str(policy), str(path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ST202" not in out
    assert "suppressed by policy" in out


@pytest.mark.parametrize(
    "setting",
    ["ignore = true", 'severity = "warning"'],
    ids=["ignore", "downgrade"],
)
@pytest.mark.parametrize("rule", ["ST406", "buffer-trailing-bytes", "ST102", "file-is-pickle"])
def test_a_rule_the_reference_rejects_cannot_be_ignored_or_downgraded(tmp_path, capsys, rule, setting):
    # Issue 12: `ignore = true` on buffer-trailing-bytes turned a file that
    # safetensors rejects into `valid: true`, exit 0.
    path = write(tmp_path / "trailing.safetensors", clean_file() + b"\x00")
    policy = policy_file(tmp_path, f'[rules.{rule}]\n{setting}\nreason = "our exporter pads"\n')
    rc = main(["scan", "--progress", "never", "--policy", str(policy), str(path)])
    captured = capsys.readouterr()
    assert rc == 2
    assert "safetensors 0.8.0 rejects every file that breaks" in captured.err
    assert "a policy cannot ignore it or lower it to a warning" in captured.err
    assert captured.out == ""


def test_raising_a_reference_rule_to_error_is_allowed(tmp_path):
    policy = policy_file(tmp_path, '[rules.ST406]\nseverity = "error"\nreason = "already an error"\n')
    assert load_policy(str(policy)).rules["buffer-trailing-bytes"].severity is not None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[rules.tensor-all-zero]\nseverity = "error"\n', "needs a non-empty 'reason'"),
        ('[rules.tensor-all-zero]\nreason = "x"\n', "give 'severity' or 'ignore = true'"),
        ('[rules.no-such-rule]\nignore = true\nreason = "x"\n', "unknown rule 'no-such-rule'"),
        ('[rules.ST601]\nseverity = "fatal"\nreason = "x"\n', "expected 'error' or 'warning'"),
        ("max_tensor = 3\n", "unknown policy key 'max_tensor'"),
        ('max_file_size = "big"\n', "expected a byte count"),
        ('allowed_dtypes = ["F33"]\n', "unknown dtype 'F33'"),
        ("max_tensors = -1\n", "non-negative integer"),
        ("this is = not toml", "not valid TOML"),
    ],
    ids=[
        "no-reason",
        "no-action",
        "unknown-rule",
        "bad-severity",
        "unknown-key",
        "bad-size",
        "bad-dtype",
        "negative",
        "bad-toml",
    ],
)
def test_malformed_policy_is_a_usage_error(tmp_path, capsys, text, error):
    path = write(tmp_path / "ok.safetensors", clean_file())
    policy = policy_file(tmp_path, text)
    rc = main(["scan", "--progress", "never", "--policy", str(policy), str(path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert error in err
    with pytest.raises(PolicyError, match=error.replace("(", r"\(").replace(")", r"\)")):
        load_policy(str(policy))


def test_sizes_accept_units():
    policy = parse_policy({"max_file_size": "2 GiB", "max_header_size": "1_000 KB"}, "t")
    assert (policy.max_file_size, policy.max_header_size) == (2 * 2**30, 1_000_000)


def test_pyproject_tool_stcheck_is_read_from_the_working_directory(tmp_path, capsys, monkeypatch):
    path = write(tmp_path / "f64.safetensors", f64_file())
    write(tmp_path / "pyproject.toml", b'[project]\nname = "x"\n\n[tool.stcheck]\nforbidden_dtypes = ["F64"]\n')
    monkeypatch.chdir(tmp_path)
    rc, doc = scan_json(capsys, str(path))
    assert rc == 1
    assert doc["policy"].endswith("pyproject.toml [tool.stcheck]")
    assert [f["rule"] for f in doc["files"][0]["findings"]] == ["policy-dtype-forbidden"]
    rc, doc = scan_json(capsys, "--no-config", str(path))
    assert rc == 0
    # --policy pyproject.toml reads the same table.
    rc, doc = scan_json(capsys, "--policy", str(tmp_path / "pyproject.toml"), str(path))
    assert rc == 1
