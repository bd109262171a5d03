# Strategy: the one policy in force for a run, for the command line and the
# library alike: a policy file (or a Policy), else the user's pyproject
# [tool.stcheck] from the working directory up, never one inside what is
# checked; `no_config` skips it; the --select/--ignore rule selection on top.
#
# --select and --ignore take rule codes, slugs or code prefixes (ST6, ST40)
# and mean what a policy's `ignore = true` means: the findings stay in the
# machine formats, marked suppressed with the reason, and do not count.  A
# rule for which safetensors 0.8.0 rejects the file cannot be ignored: an
# --ignore that names one is refused, and --select leaves those rules on.
#
# An error names the option the way its caller spells it: the library's
# fields (`ignore`) by default, the command line's flags (`--ignore`) when
# validator.cli asks with FLAG_NAMES.
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from validator._rules import RULES, Rule, did_you_mean, find_rule
from validator.config.policy import (
    Policy,
    PolicyError,
    RuleSetting,
    discover_policy,
    load_policy,
    rejected_by_reference,
)
from validator.sources.schemes import STDIN, is_remote

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["FIELD_NAMES", "FLAG_NAMES", "OptionNames", "passed_over_note", "resolve_policy", "selection"]


@dataclass(frozen=True)
class OptionNames:
    """How errors name the rule selection's options: the library's fields or the CLI's flags."""

    select: str
    ignore: str


FIELD_NAMES: Final = OptionNames("select", "ignore")
FLAG_NAMES: Final = OptionNames("--select", "--ignore")


# -- rule selection ----------------------------------------------------------------


def _matching(token: str, option: str) -> list[Rule]:
    """The rules a --select/--ignore token names: a code, a slug, a code prefix, or ALL."""
    key = token.strip()
    if key.upper() == "ALL":
        return list(RULES)
    rule = find_rule(key)
    if rule is not None:
        return [rule]
    if key[:2].upper() == "ST" and key[2:].isdigit() and len(key) < 5:
        found = [r for r in RULES if r.code.startswith(key.upper())]
        if found:
            return found
    hint = did_you_mean(key) or "; `stcheck rules` lists them"
    msg = f"{option} {token}: no rule has this code, slug or code prefix{hint}"
    raise PolicyError(msg)


def _tokens(values: Sequence[str]) -> list[str]:
    return [t.strip() for value in values for t in value.split(",") if t.strip()]


def selection(
    select: Sequence[str], ignore: Sequence[str], *, spelling: OptionNames = FIELD_NAMES
) -> tuple[dict[str, RuleSetting], list[str]]:
    """The rule settings of ``select`` and ``ignore``, and their names for the report.

    Raises PolicyError, naming the option as ``spelling`` spells it, for an
    unknown rule, or an ``ignore`` of a rule for which safetensors 0.8.0
    rejects the file."""
    settings: dict[str, RuleSetting] = {}
    names = []
    chosen = _tokens(select)
    if chosen:
        names.append("--select " + ",".join(chosen))
        keep = {r.slug for token in chosen for r in _matching(token, spelling.select)}
        why = f"not in --select {','.join(chosen)}"
        for rule in RULES:
            if rule.slug not in keep and not rejected_by_reference(rule):
                settings[rule.slug] = RuleSetting(why, ignore=True)
    dropped = _tokens(ignore)
    if dropped:
        names.append("--ignore " + ",".join(dropped))
        for token in dropped:
            for rule in _matching(token, spelling.ignore):
                if rejected_by_reference(rule):
                    msg = (
                        f"{spelling.ignore} {token}: safetensors 0.8.0 rejects every file that breaks {rule.code} "
                        f"{rule.slug}; it cannot be ignored"
                    )
                    raise PolicyError(msg)
                settings[rule.slug] = RuleSetting(f"--ignore {token}", ignore=True)
    return settings, names


# -- the policy in force -------------------------------------------------------------


def resolve_policy(
    checked: Sequence[str],
    *,
    policy: str | Policy | None = None,
    no_config: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    on_passed_over: Callable[[str], None] | None = None,
    spelling: OptionNames = FIELD_NAMES,
) -> tuple[Policy | None, list[str]]:
    """The one policy in force and the names of what it is made of.

    ``policy`` (a file or a Policy), else the [tool.stcheck] of the nearest
    pyproject.toml from the working directory upward that lies inside no
    ``checked`` path (configuration comes from the user, never from what is
    vetted), else none; then ``select`` and ``ignore`` on top.  Each
    candidate passed over is given to ``on_passed_over``.  Raises
    PolicyError, naming ``select`` and ``ignore`` as ``spelling`` spells them."""
    found_policy: Policy | None = None
    if isinstance(policy, Policy):
        found_policy = policy
    elif policy:
        found_policy = load_policy(policy)
    elif not no_config:
        found = discover_policy([p for p in checked if not is_remote(p) and p != STDIN])
        for candidate in found.passed_over:
            if on_passed_over is not None:
                on_passed_over(candidate)
        found_policy = found.policy
    names = [found_policy.source] if found_policy is not None and found_policy.source else []
    settings, extra = selection(select, ignore, spelling=spelling)
    if settings:
        base = found_policy or Policy()
        source = "; ".join([*names, *extra])
        found_policy = replace(base, rules={**base.rules, **settings}, source=source)
    return found_policy, [*names, *extra]


def passed_over_note(candidate: str, verb: str = "checked") -> str:
    """Why a pyproject.toml found at or above the working directory was not read.

    The same words for the library and the command line: "the policy" is
    both ``policy=`` and ``--policy``."""
    return (
        f"not reading {candidate}: it lies inside a {verb} path and is not at the root of a checkout of your own "
        "(a .git or .hg beside it), and configuration comes from the user, never from what is vetted "
        "(give it as the policy to use it)"
    )
