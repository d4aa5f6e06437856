"""The dra-webhook benchmark suite (``python -m bench [--quick]``, ``make bench``).

Every figure is a ratio against a floor measured in the same run (B1 in-process admission,
B2 HTTP, B3 allocator scaling, B4 incremental state, B5 memory); targets are reported as met or
not met, never asserted. Results go to stdout and ``bench/results.md``. See docs/performance.md.
"""
