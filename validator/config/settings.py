# Strategy: the one place that reads the process environment, and the
# settings objects the pipeline passes down instead of an argparse
# namespace.  Each run reads the environment once, through `environment()`
# (uncached, so a test or a long-lived service that changes a variable sees
# it on its next run); nothing else in the package touches os.environ for a
# setting.  Configuration never comes from inside what is vetted: these are
# the user's variables, and the policy is found by validator.config.policy.
# ruff: noqa: PTH111, PTH118
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_CONCURRENCY", "DEFAULT_NETWORK_TIMEOUT", "Environment", "Network", "environment"]

DEFAULT_NETWORK_TIMEOUT: Final = 30.0
DEFAULT_CONCURRENCY: Final = 16
SPEC_URL_ENV: Final = "STCHECK_SPEC_URL"


@dataclass(frozen=True)
class Environment:
    """What stcheck takes from the environment."""

    hf_hub_cache: str  # $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub
    hf_endpoint: str | None  # $HF_ENDPOINT
    spec_url: str | None  # $STCHECK_SPEC_URL: where SPEC.md is hosted, for links in reports
    cache_home: str  # $XDG_CACHE_HOME or ~/.cache
    no_color: bool  # $NO_COLOR set
    force_color: bool  # $FORCE_COLOR set to a true value
    dumb_terminal: bool  # $TERM=dumb


def environment(env: Mapping[str, str] | None = None) -> Environment:
    """The settings in ``env`` (default: the process environment), read once for a run."""
    env = os.environ if env is None else env
    cache_home = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    hub = (
        env.get("HF_HUB_CACHE")
        or env.get("HUGGINGFACE_HUB_CACHE")
        or os.path.join(env.get("HF_HOME") or os.path.join(cache_home, "huggingface"), "hub")
    )
    return Environment(
        hf_hub_cache=hub,
        hf_endpoint=env.get("HF_ENDPOINT") or None,
        spec_url=env.get(SPEC_URL_ENV, "").strip() or None,
        cache_home=cache_home,
        no_color=bool(env.get("NO_COLOR")),
        force_color=env.get("FORCE_COLOR", "").strip() not in {"", "0", "false"},
        dumb_terminal=env.get("TERM") == "dumb",
    )


@dataclass(frozen=True)
class Network:
    """How remote sources are read: the per-read timeout in seconds, the
    requests in flight at once, and extra request headers (sent to the
    source's origin only)."""

    timeout: float = DEFAULT_NETWORK_TIMEOUT
    concurrency: int = DEFAULT_CONCURRENCY
    headers: Mapping[str, str] = field(default_factory=dict)
