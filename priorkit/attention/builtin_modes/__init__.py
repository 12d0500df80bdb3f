"""The built-in attention modes, one file each; importing this package registers them."""
from __future__ import annotations

from .bias import Bias
from .gate import Gate
from .learned_bias import LearnedBias
from .multiply import Multiply
from .supervise import Supervise

__all__ = ["Multiply", "Bias", "Gate", "LearnedBias", "Supervise"]
