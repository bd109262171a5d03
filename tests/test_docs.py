# The README and the integration files a new user copies from (issue 12):
# every code fence is closed, no OWNER placeholder is left, installation
# is from the checkout (the package is not on an index), and the
# fresh-machine command states the number of files it really validates.
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_code_fence_is_closed() -> None:
    inside = False
    for number, line in enumerate(README.splitlines(), 1):
        if line.startswith("```"):
            inside = not inside
        elif inside:
            assert not line.startswith("## "), f"README.md:{number}: a heading inside a code block: {line}"
    assert not inside, "README.md ends inside a code block"


@pytest.mark.parametrize("name", ["README.md", ".pre-commit-hooks.yaml", ".github/actions/scan/action.yml"])
def test_no_owner_placeholder(name: str) -> None:
    assert "OWNER" not in (ROOT / name).read_text(encoding="utf-8")


def test_install_is_from_the_checkout() -> None:
    assert re.search(r"pip install '?stcheck\[", README) is None, "stcheck is not published on a package index"
    assert "pip install ." in README


def test_fresh_machine_count_matches_what_conformance_runs() -> None:
    manifest = json.loads((ROOT / "corpus" / "manifest.json").read_text(encoding="utf-8"))
    small = sum(1 for e in manifest["files"] if not e.get("large"))
    fresh = README.split("## Fresh machine", 1)[1].split("```", 1)[0]
    stated = [int(n) for n in re.findall(r"(\d+) (?:small )?files", fresh)]
    assert stated == [small], (stated, small)
    total = re.search(r"JSONTestSuite: (\d+) files", README)
    assert total is not None
    assert int(total.group(1)) == len(manifest["files"])


_USES = re.compile(r"^\s*(?:-\s*)?uses:\s*([^\s#]+)", re.MULTILINE)


@pytest.mark.parametrize("name", ["README.md", ".github/actions/scan/action.yml"])
def test_every_third_party_action_is_pinned_by_commit_sha(name: str) -> None:
    # A tag can be moved to other code; a commit cannot (issue 24).
    uses = _USES.findall((ROOT / name).read_text(encoding="utf-8"))
    remote = [u for u in uses if not u.startswith("./")]
    assert remote, f"{name}: no action found to check"
    unpinned = [u for u in remote if re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", u) is None]
    assert unpinned == []


def test_the_sarif_upload_is_skipped_on_pull_requests_from_forks() -> None:
    action = (ROOT / ".github" / "actions" / "scan" / "action.yml").read_text(encoding="utf-8")
    upload = action.split("- name: Upload SARIF", 1)[1].split("- name:", 1)[0]
    condition = re.search(r"if: \$\{\{(.*)\}\}", upload)
    assert condition is not None
    assert "github.event.pull_request.head.repo.fork != true" in condition.group(1)
    assert "github.event.pull_request.head.repo.fork == true" in action  # the notice that says so


def test_the_ci_example_checks_stcheck_out_at_a_fixed_ref() -> None:
    ci = README.split("### Use it in CI", 1)[1].split("\n## ", 1)[0]
    assert "repository: <owner>/stcheck" in ci
    assert re.search(r"^\s+ref: <commit SHA", ci, re.MULTILINE)
