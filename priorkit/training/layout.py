"""The names inside a run folder (``runs/NAME/PRIOR/fracF/seedS/``), in one place.

Torch-free and importing nothing of priorkit, so the run plan, the trackers and the
steps can all read them without importing each other.
"""
from __future__ import annotations

RUN_FILE = "run.json"
MODEL_DIR = "model"
METRICS_FILE = "metrics.json"
#: the name of the no-prior setting
NO_PRIOR = "none"
