"""Using a trained model: :func:`load_model` (a model folder -> :class:`Predictor`),
``priorkit predict`` (priorkit/commands/predict.py) and the files a model folder
carries (``folder``: priorkit.json and the model card).  See docs/inference.md."""
from __future__ import annotations

from .ensemble import Ensemble, load_ensemble
from .loader import load_model
from .predictor import PredictionWarning, Predictor, entities, resolve_folder
from .recipe import Recipe

__all__ = ["load_model", "load_ensemble", "Ensemble", "Predictor", "Recipe", "PredictionWarning", "entities",
           "resolve_folder"]
