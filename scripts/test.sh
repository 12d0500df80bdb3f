#!/usr/bin/env bash
# The test suite, on a fresh machine: installs what it needs, then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# pytest-xdist: one worker per core, at most 4 (PRIORKIT_TEST_WORKERS=N overrides; 0 runs the tests
# in this one process).  --dist loadfile keeps a file's tests on one worker, so its module fixtures
# are built once.  Later arguments win: `bash scripts/test.sh -n 0 tests/test_cache.py`.
cores="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
workers="${PRIORKIT_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}"
exec .venv/bin/python -m pytest -q --timeout=900 -n "$workers" --dist loadfile "$@"
