# Strategy: Hypothesis settings profiles, chosen by HYPOTHESIS_PROFILE
# (default "dev").  `ci` is sized so tests/property/ fits in CI on 2 cores and
# is derandomized, so a CI run is reproducible; `nightly` runs 100x the
# examples of `ci`:  HYPOTHESIS_PROFILE=nightly python -m pytest tests/property
from __future__ import annotations

import os

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
