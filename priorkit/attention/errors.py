"""Errors raised by prior-guided attention.

They subclass :class:`priorkit.errors.PriorkitError` (so ``except PriorkitError``
catches them) and the matching built-in (``ValueError``/``TypeError``) so code
that only knows the standard exceptions still works.
"""
from __future__ import annotations

from ..errors import PriorkitError


class PriorShapeError(PriorkitError, ValueError):
    """The ``prior=`` tensor passed to the model has the wrong shape."""


class PriorAttentionConfigError(PriorkitError, ValueError):
    """``enable_prior_attention`` got bad settings (layers, heads, mode, options)."""


class UnsupportedModelError(PriorkitError, TypeError):
    """The model's architecture or attention implementation cannot take a prior."""
