"""Helpers shared by the tests and the benchmarks (benchmarks import them; tests never import benchmarks).

- ``plugins/trigram_plugin.py``: a real provider plug-in file (character-trigram
  Jaccard), loaded from its folder like any user's plug-in;
- ``workload.py``: STS-B workloads for precompute runs, and reading a cache back;
- ``faults.py``: crash faults (kill -9, full disk, read-only folder) injected
  into child precompute processes;
- ``contention.py``: readers and writers at once, and files at the cache path
  that are not whole caches.
"""
