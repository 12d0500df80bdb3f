"""Knowledge sources as providers: the interface every plug-in implements (:mod:`.base`), the
plug-in manager and its hooks (:mod:`.plugins`, :mod:`.hookspecs`), one description of a prior as
data (:mod:`.spec`) and judging a prior against human ratings (:mod:`.prior_eval`).  The
providers themselves are plug-ins (``plugins/``, docs/plugins.md)."""
from __future__ import annotations

from .base import Match, PriorProvider, validate_matches, validate_output

__all__ = ["PriorProvider", "Match", "validate_output", "validate_matches"]
