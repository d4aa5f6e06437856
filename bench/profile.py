"""``python -m bench.profile [CASE] [--endpoint validate|mutate] [-n N] [--top K]``: cProfile the B1
pipeline for one case and print the hottest functions (by own time and by cumulative time).

Cases: the B1 objects (``slice-partitionable-64``, ``slice-plain-128``, ``claim-cel``,
``podgroup-4``) and ``claim-cel+state``: the claim with a 2-node generated cluster state, so the
capacity defaulting and the feasibility check run as they do in ``dra-webhook serve``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from bench import gen


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile")
    p.add_argument("case", nargs="?", default="slice-partitionable-64")
    p.add_argument("--endpoint", default="validate", choices=["validate", "mutate"])
    p.add_argument("-n", type=int, default=50)
    p.add_argument("--top", type=int, default=20)
    a = p.parse_args(argv)

    from webhook.admission import decode_body
    from webhook.admission.pipeline import review
    from webhook.admission.response import json_body
    from webhook.config import Settings
    from webhook.gates import FeatureGates
    from webhook.state.base import ClusterSnapshot, StaticState

    settings = Settings(gates=FeatureGates.parse(gen.GATES))
    state = None
    name = a.case
    if name.endswith("+state"):
        name = name[:-len("+state")]
        state = StaticState(ClusterSnapshot.from_objects(gen.cluster(2)))
    objs = gen.b1_objects()
    if name not in objs:
        p.error(f"unknown case {name!r}; one of {', '.join(objs)} (optionally +state)")
    body = gen.body(objs[name])

    def call() -> bytes:
        resp, _ = review(decode_body(body), settings, state, endpoint=a.endpoint)
        return json_body(resp)  # as the server encodes it
    for _ in range(3):
        call()
    t0 = time.perf_counter()
    for _ in range(a.n):
        call()
    per = (time.perf_counter() - t0) / a.n
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(a.n):
        call()
    prof.disable()
    print(f"{a.case} /{a.endpoint}: {per * 1e3:.2f} ms per review without the profiler ({a.n} runs)")
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(a.top)
    st.sort_stats("cumtime").print_stats(a.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
