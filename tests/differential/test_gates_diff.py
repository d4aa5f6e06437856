"""Our gate table is upstream's: every gate we know has the stage, 1.37 default, lock and
dependencies that the 1.37 components register (`dra-allocate --print-gates`), and we know
every DRA and workload-scheduling gate they have, so any `--feature-gates` an apiserver takes
for them is one we take too (and the combinations it refuses, we refuse)."""

from __future__ import annotations

import pytest

from tests.differential.profiles import SCHEDULING, upstream_gates
from webhook import ConfigError
from webhook.gates import KNOWN, FeatureGates

pytestmark = pytest.mark.differential


def test_every_dra_and_scheduling_gate_is_known():
    theirs = {n for n in upstream_gates() if n.startswith("DRA") or n in SCHEDULING}
    assert theirs <= set(KNOWN), sorted(theirs - set(KNOWN))


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_gate_matches_upstream(name: str):
    up = upstream_gates()[name]
    ours = KNOWN[name]
    assert (ours.stage, ours.default, ours.locked) == (up["stage"], up["default"], up["locked"])
    assert sorted(str(d) for d in ours.requires) == sorted(up["dependencies"])


@pytest.mark.parametrize("name", sorted(n for n in KNOWN if KNOWN[n].requires))
def test_a_gate_without_its_dependencies_is_refused(name: str):
    """Every dependency turned off in turn, with the gate on: refused, naming both."""
    for dep in KNOWN[name].requires:
        if KNOWN[str(dep)].locked:
            continue
        with pytest.raises(ConfigError, match=f"{name} is enabled, but depends on features that are disabled"):
            FeatureGates().with_overrides({name: True, str(dep): False})
