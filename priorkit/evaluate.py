"""Deprecated name of :mod:`priorkit.prior_eval` (judging a prior against human similarity
ratings; model evaluation is in :mod:`priorkit.pipeline.train`); import from there.
This module re-exports its names and warns once."""
from __future__ import annotations

import warnings

from .prior_eval import *  # noqa: F401,F403
from .prior_eval import (EvalResult, WordPairs, correlations, evaluate, evaluate_many,  # noqa: F401
                         parse_provider_spec, provider_from_spec, read_word_pairs, results_markdown,
                         results_table)

warnings.warn("priorkit.evaluate was renamed priorkit.prior_eval; import from there", DeprecationWarning,
              stacklevel=2)
