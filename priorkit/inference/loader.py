"""The one loader: ``priorkit.load_model(folder)`` gives a :class:`~priorkit.inference.Predictor`
for a model folder (or a run folder, or a pipeline's output folder holding one run) and a
:class:`~priorkit.inference.recipe.Recipe` for a recipe folder (priorkit.json kind ``recipe``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .predictor import load_model as load_predictor
from .recipe import load_recipe
from .recipe_folder import is_recipe


def load_model(path: str | Path, *, device: str | None = None, use_cache: bool = True,
               max_length: int | None = None, decode: str | None = None, o_bias: float | None = None) -> Any:
    """Load a priorkit model folder (module doc).

    ``use_cache``: read word pairs from the cache the run used (read-only; words it
    lacks are computed, nothing is written; an unreadable or locked cache is skipped
    with a warning).  ``max_length``: tokens per input (default: the training max length).
    ``decode``: NER only, ``argmax`` or ``viterbi`` (default: the run's ``task.decode``, a
    recipe's decode step); ``o_bias``: NER, added to each word's log-probability of ``O``
    (default: the run's ``task.o_bias``, the recipe's).
    """
    kwargs = dict(device=device, use_cache=use_cache, max_length=max_length, decode=decode, o_bias=o_bias)
    if is_recipe(path):
        return load_recipe(path, **kwargs)
    return load_predictor(path, **kwargs)
