"""Fixtures for the Helm chart tests (rendering lives in helpers.py)."""

from __future__ import annotations

import pytest

from tests.chart.helpers import CI_FILES, Rendered, rendered_ci


@pytest.fixture(params=CI_FILES)
def ci(request: pytest.FixtureRequest) -> Rendered:
    """Parametrised over every `ci/*-values.yaml`: the rendered chart for that file."""
    return rendered_ci(request.param)


@pytest.fixture
def default() -> Rendered:
    """The chart rendered with its default values."""
    return rendered_ci("default-values.yaml")
