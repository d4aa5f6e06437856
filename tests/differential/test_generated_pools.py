"""Pool lint against upstream: the publish checks against upstream's driver helper (`pool-check`),
and the allocator findings against our allocator's own pool gathering (which the allocator
differential tests compare with upstream's).

- Publish: generated pools (`gen_pools.publish_pool`) go to the helper in one batch process; it
  publishes a pool or refuses it with its first problem. Ours must refuse exactly the pools it
  refuses, and our first publish finding must be its problem (the helper stops at the first; the
  one exception is the order of two counters of one consumption, which Go's map order decides:
  there the helper's counter must be among ours for that consumption). Zero disagreements.
- Allocator: for stored pools under three gate sets, what the lint says the scheduler does with a
  pool must hold in `pools.gather_pools` for the node the slices are on (no Go needed).
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tests.differential.conftest import scale
from tests.differential.gen_pools import DRIVER, POOL, publish_pools, stored_pools
from tests.differential.generated import draw_many
from tests.differential.oracle import PoolOracle
from tests.rig.cluster import BIN, REPO, ensure_binaries
from webhook.allocator.model import model_for
from webhook.allocator.poollint import PUBLISH, Check, PoolFinding, lint_pool, publish_findings
from webhook.allocator.pools import gather_pools
from webhook.gates import FeatureGates, Gate
from webhook.state.base import ClusterSnapshot

COUNT = 2000
SALT = 27_0001

#: The helper's refusals, as it words them.
REFUSALS = [
    (Check.DUPLICATE_COUNTER_SET, re.compile(r'found duplicate counter set "(?P<name>[^"]*)" in pool "[^"]*"')),
    (Check.DUPLICATE_DEVICE, re.compile(r'found duplicate device "(?P<name>[^"]*)" in pool "[^"]*"')),
    (Check.UNKNOWN_COUNTER_SET,
     re.compile(r'counter set "(?P<name>[^"]*)" referenced by device "(?P<device>[^"]*)" not found')),
    (Check.UNKNOWN_COUNTER, re.compile(r'counter "(?P<name>[^"]*)" referenced by device "(?P<device>[^"]*)" '
                                       r'not found in counter set "(?P<counter_set>[^"]*)"')),
]


def refusal(error: str) -> tuple[Check, dict[str, str]]:
    """(check, names) of the helper's error message."""
    for check, pattern in REFUSALS:
        if (m := pattern.fullmatch(error)) is not None:
            return check, m.groupdict()
    raise AssertionError(f"an error of the helper no check of ours names: {error!r}")


def disagreement(ours: list[PoolFinding], verdict: dict[str, Any]) -> str:
    """"" when our publish findings say what the helper said; else how they differ."""
    if verdict["published"]:
        return f"the helper publishes the pool; ours refuses: {[f.check.value for f in ours]}" if ours else ""
    if not ours:
        return f"the helper refuses the pool ({verdict['error']}); ours has no finding"
    check, names = refusal(verdict["error"])
    first = ours[0]
    if first.check != check:
        return f"the helper's first problem is {check.value} ({verdict['error']}); ours is {first.check.value}"
    if check == Check.UNKNOWN_COUNTER:  # Go's map order picks one of the entry's missing counters
        same_entry = [f for f in ours if f.check == check and f.places[0].field.rsplit(".", 1)[0]
                      == first.places[0].field.rsplit(".", 1)[0] and f.places[0].slice == first.places[0].slice]
        if names["name"] not in {f.name for f in same_entry} or (names["device"], names["counter_set"]) != \
                (first.device, first.counter_set):
            return f"the helper: {verdict['error']}; ours: {[(f.name, f.device, f.counter_set) for f in same_entry]}"
        return ""
    got = {"name": first.name, **({"device": first.device} if "device" in names else {})}
    return "" if got == names else f"the helper: {verdict['error']}; ours: {got}"


@pytest.mark.differential
def test_publish_checks_agree_with_the_driver_helper(pool_oracle: PoolOracle) -> None:
    pools = draw_many(publish_pools(), COUNT * scale(), SALT)
    found, refused = [], 0
    for i, slices in enumerate(pools):
        verdict = pool_oracle.check(f"pool#{i}", slices)
        refused += not verdict["published"]
        if why := disagreement(publish_findings(DRIVER, POOL, slices), verdict):
            found.append(f"pool#{i}: {why}\n  slices: {slices}")
    assert not found, f"{len(found)} disagreements in {len(pools)} pools:\n" + "\n".join(found[:20])
    assert len(pools) * 0.3 < refused < len(pools) * 0.8, refused  # both verdicts are well represented


def test_the_generator_reaches_every_publish_check() -> None:
    pools = draw_many(publish_pools(), 300, SALT)
    seen = {f.check for slices in pools for f in publish_findings(DRIVER, POOL, slices)}
    assert seen == set(PUBLISH)
    assert any(not publish_findings(DRIVER, POOL, slices) for slices in pools)


GATE_SETS = {
    "defaults": {},
    "partitionable-off": {Gate.DRA_PARTITIONABLE_DEVICES: False},
    "groups-on": {Gate.DRA_DEVICE_COMPATIBILITY_GROUPS: True},
}


@pytest.mark.parametrize("gates", list(GATE_SETS.values()), ids=list(GATE_SETS))
def test_what_the_lint_says_the_scheduler_does_is_what_our_allocator_does(gates: dict[str, bool]) -> None:
    fg = FeatureGates().with_overrides({str(k): v for k, v in gates.items()})
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}}
    wrong = []
    for i, slices in enumerate(draw_many(stored_pools(), 600, SALT + 1)):
        findings = lint_pool(DRIVER, POOL, slices, fg)
        checks = {f.check for f in findings}
        incomplete = any(f.incomplete for f in findings)
        model = model_for(ClusterSnapshot.from_objects([*slices, node]), fg)
        for pool in gather_pools(model, model.node("worker-1")):
            if pool.incomplete and not (incomplete or Check.OLDER_GENERATION in checks):
                wrong.append(f"#{i}: the allocator finds the pool incomplete; the lint says {sorted(checks)}")
            if pool.invalid and not checks & set(PUBLISH):
                wrong.append(f"#{i}: the allocator finds the pool invalid ({pool.invalid_reason}); "
                             f"the lint says {sorted(checks)}")
            # (While a gate hides the newest generation, the scheduler may take an older one whole.)
            if not (pool.incomplete or pool.invalid) and Check.SLICE_COUNT in checks and pool.candidates \
                    and not checks & {Check.COUNTS_DISAGREE, Check.HIDDEN_BY_GATE}:
                wrong.append(f"#{i}: the allocator uses the pool; the lint says {sorted(checks)}")
    assert not wrong, "\n".join(wrong[:20])


@pytest.mark.differential
@pytest.mark.parametrize(("args", "code", "published"), [
    pytest.param(["-f", "examples/resourceslices/"], 0, [True, True, True], id="example-pools-are-published"),
    pytest.param(["-f", "examples/driver-ci/broken-pool/"], 1, [False], id="a-broken-pool-is-refused"),
    pytest.param([], 2, [], id="no-input-is-a-usage-error"),
    pytest.param(["-f", "no/such/dir"], 2, [], id="a-missing-path-is-bad-input"),
])
def test_pool_check_command(args: list[str], code: int, published: list[bool]) -> None:
    ensure_binaries()
    r = subprocess.run([str(BIN / "pool-check"), *args], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == code, r.stderr
    assert [json.loads(line)["published"] for line in r.stdout.splitlines()] == published
    assert (r.stderr == "") == (code != 2)
