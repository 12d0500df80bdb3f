"""Deprecated name of :mod:`priorkit.pipeline.ranks` (the processes of one training job);
import from there.  This module re-exports its names and warns once."""
from __future__ import annotations

import warnings

from .ranks import *  # noqa: F401,F403
from .ranks import TIMEOUT_S, barrier, init, is_main, local_world_size, on_main, rank, world_size  # noqa: F401

warnings.warn("priorkit.pipeline.dist was renamed priorkit.pipeline.ranks; import from there",
              DeprecationWarning, stacklevel=2)
