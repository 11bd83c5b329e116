import os

import pytest
from hypothesis import HealthCheck, settings

from tests.support.rust import PURE_PYTHON, PURE_REASON, core

settings.register_profile(
    "default", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_sessionstart(session):
    """Without TINYLLM_PURE_PYTHON=1 the compiled core must be selected (tests.support.rust has
    already failed the run if it cannot be imported): never test the reference twice unawares."""
    from tinyllm import _native

    if not PURE_PYTHON and _native.core is not core:
        raise pytest.UsageError("tinyllm._native did not select tinyllm._core although "
                                "TINYLLM_PURE_PYTHON is not set")


def pytest_collection_modifyitems(config, items):
    """Under TINYLLM_PURE_PYTHON=1, the tests marked needs_rust skip, by name, with one reason."""
    if not PURE_PYTHON:
        return
    skip = pytest.mark.skip(reason=PURE_REASON)
    for item in items:
        if item.get_closest_marker("needs_rust") is not None:
            item.add_marker(skip)
