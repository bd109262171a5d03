# Strategy: the one place that says how to install an optional extra.
# stcheck is on no package index, so a hint that installs the extra by the
# package's name finds nothing, or, worse, whatever someone registers under
# that name later.  A hint must work as written, so it names a source that
# exists:
#   1. the checkout this package runs from (a source tree: the folder above
#      validator/ holds stcheck's pyproject.toml), as a path;
#   2. else the checkout pip installed it from, named in the distribution's
#      direct_url.json (PEP 610), when that folder still holds the project;
#   3. else the extra's own requirements, read from the installed metadata:
#      packages that are on PyPI under their own names;
#   4. else a placeholder path to a clone, saying that stcheck is not on PyPI.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH118, PTH120, PTH123
from __future__ import annotations

import json
import os
import re
import shlex

_DIST = "stcheck"
_PACKAGE_PARENT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # above validator/config/


def _is_checkout(folder: str) -> bool:
    """Whether ``folder`` holds stcheck's own pyproject.toml."""
    try:
        with open(os.path.join(folder, "pyproject.toml"), "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    return re.search(rb'(?m)^name\s*=\s*"stcheck"', head) is not None


def _installed_from() -> str | None:
    """The local folder pip installed stcheck from (PEP 610), if it is still a checkout."""
    from importlib import metadata  # noqa: PLC0415 - only on the error path that needs a hint
    from urllib.parse import unquote, urlparse  # noqa: PLC0415 - as above

    try:
        text = metadata.distribution(_DIST).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        url = json.loads(text or "{}").get("url", "")
    except (ValueError, AttributeError):
        return None
    parsed = urlparse(url) if isinstance(url, str) else None
    if parsed is None or parsed.scheme != "file":
        return None
    folder = unquote(parsed.path)
    return folder if _is_checkout(folder) else None


def _requirements(extra: str) -> list[str]:
    """The extra's requirements from the installed metadata (markers other than the extra kept)."""
    from importlib import metadata  # noqa: PLC0415 - only on the error path that needs a hint

    try:
        declared = metadata.requires(_DIST) or []
    except metadata.PackageNotFoundError:
        return []
    wanted = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    found = []
    for requirement in declared:
        spec, _, marker = requirement.partition(";")
        if not wanted.search(marker):
            continue
        rest = wanted.sub("", marker).strip()
        rest = re.sub(r"^\s*and\s+|\s+and\s*$", "", rest).strip()
        found.append(spec.strip() + (f"; {rest}" if rest else ""))
    return found


def install_hint(extra: str) -> str:
    """A `pip install` command, working as written, that installs ``extra``."""
    checkout = _PACKAGE_PARENT if _is_checkout(_PACKAGE_PARENT) else _installed_from()
    if checkout is not None:
        return f"pip install {shlex.quote(f'{checkout}[{extra}]')} (the {extra} extra, from this checkout of stcheck)"
    packages = _requirements(extra)
    if packages:
        return f"pip install {' '.join(map(shlex.quote, packages))} (the {extra} extra's packages, from PyPI)"
    return (
        f"pip install '/path/to/stcheck[{extra}]' from a clone of the stcheck repository "
        "(stcheck itself is not on PyPI)"
    )
