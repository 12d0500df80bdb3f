"""Deprecated location of the Dask precompute engine; import from
:mod:`priorkit.precompute.dask_engine` (driver) or
:mod:`priorkit.precompute.dask_worker` (what a worker runs) instead.

This module re-exports their names and warns once when imported.
"""
from __future__ import annotations

import warnings

from .precompute.dask_engine import *  # noqa: F401,F403
from .precompute.dask_engine import __all__  # noqa: F401

warnings.warn("priorkit.distributed moved to priorkit.precompute.dask_engine (the Dask precompute engine); "
              "import from there", DeprecationWarning, stacklevel=2)
