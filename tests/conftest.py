# Strategy: Hypothesis settings profiles, chosen by HYPOTHESIS_PROFILE
# (default "dev").  `ci` is sized so tests/property/ fits in CI on 2 cores and
# is derandomized, so a CI run is reproducible; `nightly` runs 100x the
# examples of `ci`:  HYPOTHESIS_PROFILE=nightly python -m pytest tests/property
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
CI_EXAMPLES = 30

settings.register_profile(
    "ci",
    max_examples=CI_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SLOW,
    print_blob=True,
)
settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=_SLOW, print_blob=True)
settings.register_profile(
    "nightly", max_examples=100 * CI_EXAMPLES, deadline=None, suppress_health_check=_SLOW, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# -- the signature tests' shared fixtures (tests/sign_fixtures.py makes the files) --
@pytest.fixture
def keys(tmp_path):
    """An EC key pair for signing, under tmp_path."""
    from tests.sign_fixtures import ec_keys

    return ec_keys(tmp_path)


@pytest.fixture
def signed(tmp_path, keys):
    """A small model folder, signed with ``keys``."""
    from tests.sign_fixtures import model_folder, sign_with_key

    folder = model_folder(tmp_path / "model")
    sign_with_key(folder, keys)
    return folder
