# One rule lookup, case-folded everywhere: a code or a slug names the same
# rule in `--ignore`, in `stcheck rules`, in a policy's [rules] table and in
# `validator.rule()`, in any case; and one guess for a name no rule has.
from __future__ import annotations

import json

import pytest
from scan_fixtures import write

import validator
from validator.cli.main import main
from validator.config.policy import PolicyError, load_policy, parse_policy

UNALIGNED = b"\x02\x00\x00\x00\x00\x00\x00\x00{}"  # ST104 header-unaligned, a warning only
SPELLINGS = ["ST104", "st104", "St104", "header-unaligned", "Header-Unaligned", " HEADER-UNALIGNED "]


@pytest.mark.parametrize("key", SPELLINGS)
def test_the_library_finds_a_rule_in_any_case(key: str) -> None:
    assert validator.rule(key).code == "ST104"


def test_the_library_guesses_at_a_misspelt_rule() -> None:
    with pytest.raises(KeyError) as caught:
        validator.rule("header-unalligned")
    assert caught.value.args == (
        "unknown rule 'header-unalligned'; did you mean header-unaligned? (`stcheck rules` lists them)",
    )
    with pytest.raises(KeyError) as caught:
        validator.rule("st4o1")
    assert caught.value.args == ("unknown rule 'st4o1'; did you mean ST401? (`stcheck rules` lists them)",)


@pytest.mark.parametrize("key", ["st104", "Header-Unaligned"])
def test_a_policy_names_a_rule_in_any_case(key: str, tmp_path, capsys) -> None:
    policy = parse_policy({"rules": {key: {"ignore": True, "reason": "ours"}}}, "p.toml")
    assert set(policy.rules) == {"header-unaligned"}
    # and the scan suppresses the finding, as `--ignore st104` does
    path = write(tmp_path / "warn.safetensors", UNALIGNED)
    write(tmp_path / "p.toml", f'[rules.{key}]\nignore = true\nreason = "ours"\n'.encode())
    assert load_policy(str(tmp_path / "p.toml")).rules["header-unaligned"].reason == "ours"
    rc = main(["check", "--format", "json", "--policy", str(tmp_path / "p.toml"), str(path)])
    doc = json.loads(capsys.readouterr().out)
    findings = doc["files"][0]["findings"]
    assert rc == 0
    assert [(f["code"], f["suppression"]) for f in findings] == [("ST104", {"reason": "ours"})]


def test_a_policy_guesses_at_a_misspelt_rule() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy({"rules": {"header-unalligned": {"ignore": True, "reason": "x"}}}, "p.toml")
    assert str(caught.value) == (
        "p.toml: rules.header-unalligned: unknown rule 'header-unalligned'; did you mean header-unaligned? "
        "(`stcheck rules` lists them)"
    )


@pytest.mark.parametrize("key", ["st401", "Offsets-Not-Contiguous"])
def test_rules_explains_a_rule_in_any_case(key: str, capsys) -> None:
    assert main(["rules", key]) == 0
    assert capsys.readouterr().out.startswith("ST401 offsets-not-contiguous: ")


def test_rules_and_the_library_make_the_same_guess(capsys) -> None:
    assert main(["rules", "ST4O1"]) == 2
    err = capsys.readouterr().err
    with pytest.raises(KeyError) as caught:
        validator.rule("ST4O1")
    assert err == f"stcheck rules: {caught.value.args[0]}\n"
