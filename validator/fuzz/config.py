# Strategy: one campaign's settings as one frozen value.  The CLI (or a
# library caller, or the loader matrix) builds a CampaignConfig; the
# campaign resolves its folders and hands it to an engine; an engine passes
# it to each child process it starts as ONE environment variable holding
# its JSON (CONFIG_ENV), which the child reads back with from_env().  No
# other setting travels by environment: the big and deep mutation family's
# rate and budget too are fields here, handed to the mutator (configure_big());
# the two variables of BIG_ENV are read only where no campaign started the
# process (an OSS-Fuzz entry point of fuzz/ run by hand).  The loader the campaign fuzzes is
# a LoaderSpec inside it: data only (names, a command template, limits);
# build_loader() turns it into the runner of loader_under_test.py, in the
# process that runs it.
# ruff: noqa: PTH109, PTH118
# Paths: os.path, like the rest of the package.
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import math
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any, Final

from validator.fuzz import _big
from validator.harness.rejection import REJECT_EXIT

if TYPE_CHECKING:
    from collections.abc import Mapping

    from validator.fuzz.loader_under_test import LoaderUnderTest

__all__ = [
    "AFLPP",
    "ATHERIS",
    "CONFIG_ENV",
    "PERSISTENT",
    "CampaignConfig",
    "LoaderSpec",
    "big_settings",
    "build_loader",
    "configure_big",
    "from_env",
    "replay_command",
]

CONFIG_ENV: Final = "STCHECK_FUZZ_CONFIG"
ATHERIS: Final = "atheris"
PERSISTENT: Final = "persistent"
AFLPP: Final = "aflpp"
ENGINES: Final = (ATHERIS, PERSISTENT, AFLPP)
AFL_INPUT: Final = "@@"
LOADER_UNDER_TEST: Final = "loader-under-test"
BIG_RATE: Final = _big.DEFAULT_RATE  # the share of mutations the big and deep family takes
BIG_MAX_BYTES: Final = _big.DEFAULT_BUDGET  # the largest input it builds
# Without a campaign's configuration only (fuzz/fuzz_*.py run by hand): the rate and the budget.
BIG_ENV: Final = ("STCHECK_FUZZ_BIG_RATE", "STCHECK_FUZZ_BIG_MAX_BYTES")
# Fuzzing a loader under atheris: libFuzzer hands the mutator at most
# -max_len bytes, so the 16 KiB of stcheck's own targets would cap the big
# family far below a deep header; -len_control=0 lets it use them at once.
LOADER_MAX_LEN: Final = 1 << 20
OWN_MAX_LEN: Final = 16384


@dataclasses.dataclass(frozen=True)
class LoaderSpec:
    """The loader a campaign fuzzes: a callable ``MODULE:FUNCTION`` or a command template."""

    function: str | None = None
    command: str | None = None  # 'CMD {path}'; for AFL++ 'BIN @@'; for --persistent 'HARNESS ARGS'
    pass_bytes: bool = False  # the callable takes the bytes, not a path
    reject_names: tuple[str, ...] = ()  # MODULE:NAME exceptions that are clean rejections
    reject_exit: int = REJECT_EXIT  # a command's exit code for "rejected"
    timeout_s: float = 10.0  # a command's (or a harness's) limit per input: past it, a hang
    out_dir: str = ""  # the problem classes and reproducers (--out)


@dataclasses.dataclass(frozen=True)
class CampaignConfig:
    """One campaign's settings (see `stcheck fuzz --help` for each)."""

    target: str
    seconds: float = 60.0
    engine: str = ATHERIS  # atheris, persistent (atheris over a frame-protocol harness) or aflpp
    jobs: int = 1
    workdir: str = ""  # "" until the campaign gives the run its own folder
    regressions: str = os.path.join("corpus", "regressions")
    seed_dirs: tuple[str, ...] = ()
    timeout_s: float = 10.0  # per input
    rss_limit_mb: int = 2048
    max_len: int = 0  # atheris' largest input; 0: the target's default (input_limit())
    max_findings: int = 10
    interval_s: float = 10.0
    engine_args: tuple[str, ...] = ()
    loader: LoaderSpec | None = None
    cmplog: str | None = None  # AFL++: the loader built with AFL_LLVM_CMPLOG=1 (afl-fuzz -c)
    custom_mutator: bool = True  # AFL++: stcheck's structure-aware mutator beside AFL++'s own
    minimise_s: float = 30.0
    # atheris: past the deadline, an engine still running (on its seeds) is stopped:
    # the engine's own start-up (imports under atheris' hook) takes 2 to 3 s here.
    grace_s: float = 5.0
    big_rate: float = BIG_RATE  # 0 turns the big and deep family off
    big_max_bytes: int = BIG_MAX_BYTES

    def input_limit(self) -> int:
        """The largest input atheris hands the target: --max-len, else the target's default."""
        if self.max_len > 0:
            return self.max_len
        return LOADER_MAX_LEN if self.target == LOADER_UNDER_TEST else OWN_MAX_LEN

    def to_json(self) -> str:
        """The value CONFIG_ENV carries to a child process."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CampaignConfig:
        """The configuration to_json() wrote; ValueError for anything else."""
        try:
            raw = json.loads(text)
            loader = raw.pop("loader")
            spec = None if loader is None else LoaderSpec(**{**loader, "reject_names": tuple(loader["reject_names"])})
            raw.update(seed_dirs=tuple(raw["seed_dirs"]), engine_args=tuple(raw["engine_args"]), loader=spec)
            return cls(**raw)
        except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as exc:
            msg = f"{CONFIG_ENV} does not hold a campaign configuration ({exc})"
            raise ValueError(msg) from exc

    def child_env(self) -> dict[str, str]:
        """The one variable a child process needs to find this configuration."""
        return {CONFIG_ENV: self.to_json()}


def from_env(environ: Mapping[str, str] | None = None) -> CampaignConfig:
    """The configuration of the campaign that started this process (CONFIG_ENV)."""
    text = (os.environ if environ is None else environ).get(CONFIG_ENV)
    if not text:
        msg = f"{CONFIG_ENV} is not set: this process was not started by a stcheck fuzz campaign"
        raise ValueError(msg)
    return CampaignConfig.from_json(text)


def big_settings(environ: Mapping[str, str] | None = None) -> tuple[float, int]:
    """The big and deep family's (rate, budget in bytes): the campaign's, else BIG_ENV's, else the defaults.

    The rate is clamped to [0, 1] and the budget to at least 64 bytes; a
    malformed value is the default.
    """
    env = os.environ if environ is None else environ
    given: tuple[object, object] = (None, None)  # a broken configuration: the defaults
    if not env.get(CONFIG_ENV):
        given = (env.get(BIG_ENV[0]), env.get(BIG_ENV[1]))
    else:
        with contextlib.suppress(ValueError):
            config = from_env(env)
            given = (config.big_rate, config.big_max_bytes)
    given_rate, given_budget = given
    rate, budget = _number(given_rate, BIG_RATE), _number(given_budget, BIG_MAX_BYTES)
    return min(max(rate, 0.0), 1.0), max(int(budget), 64)


def configure_big(environ: Mapping[str, str] | None = None) -> None:
    """Hand this process's mutator the big and deep family's settings (big_settings()).

    Called where a fuzzing child starts (inprocess.fuzz, afl_mutator.init).
    """
    _big.configure(*big_settings(environ))


def _number(given: object, default: float) -> float:
    try:
        value = default if given is None or given == "" else float(given)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


def replay_argv(command: str) -> str:
    """A command template with AFL++'s ``@@`` written ``{path}``, as one process per input runs it."""
    words = shlex.split(command)
    return " ".join("{path}" if word == AFL_INPUT else shlex.quote(word) for word in words)


def build_loader(config: CampaignConfig) -> LoaderUnderTest:
    """The runner of ``config``'s loader.  A callable is imported here, from the working directory too."""
    from validator.fuzz.loader_under_test import LoaderUnderTest  # noqa: PLC0415 - the child's cost only

    spec = config.loader
    if spec is None:
        msg = "the campaign names no loader (--loader or --loader-cmd)"
        raise ValueError(msg)
    if spec.command is not None:
        # A command's rejection types are matched by name in its traceback; nothing of the user's is imported here.
        command = replay_argv(spec.command) if config.engine == AFLPP else spec.command
        return LoaderUnderTest(
            command=command,
            reject_exit=spec.reject_exit,
            reject_names=spec.reject_names,
            persistent=config.engine == PERSISTENT,
            timeout_s=spec.timeout_s,
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    clean = tuple(_named(name) for name in spec.reject_names)
    return LoaderUnderTest(function=_named(spec.function or ""), pass_bytes=spec.pass_bytes, clean=clean)


def _named(spec: str) -> Any:  # noqa: ANN401 - whatever the user names
    """The object ``MODULE:NAME`` (``NAME`` may be dotted) names, imported."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not attr:
        msg = f"{spec!r}: name a callable as module:function"
        raise ValueError(msg)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def loader_flags(config: CampaignConfig) -> str:
    """The flags that name ``config``'s loader on a `stcheck fuzz loader-under-test` line."""
    spec = config.loader
    if spec is None:
        return ""
    if spec.function is not None:
        return f"--loader {shlex.quote(spec.function)}"
    flags = f"--loader-cmd {shlex.quote(spec.command or '')}"
    if config.engine == AFLPP:
        flags = f"--engine {AFLPP} {flags}"
    elif config.engine == PERSISTENT:
        flags = f"--persistent {flags}"
    return f"{flags} --timeout {spec.timeout_s:g}"  # a command's hang is judged by the same limit as in the run


def replay_command(config: CampaignConfig, path: str, *, hang: bool = False) -> str:
    """The line that replays ``path`` as ``config`` ran it; a callable's hang under `timeout`."""
    if config.target != LOADER_UNDER_TEST:
        return f"stcheck fuzz {config.target} --replay {shlex.quote(path)}"
    # A callable is replayed in stcheck's own process, which no --timeout can stop.
    limit = f"timeout {hang_limit(config)} " if hang and config.loader and config.loader.function else ""
    return f"{limit}stcheck fuzz {LOADER_UNDER_TEST} {loader_flags(config)} --replay {shlex.quote(path)}"


def hang_limit(config: CampaignConfig) -> int:
    """Seconds a replay of a callable's hang may run before `timeout` ends it."""
    return int(config.timeout_s * 2 + 5)
