"""Which Hugging Face encoders can take a prior, and where their attention modules sit.

An architecture qualifies when (checked for each one in tests/test_attention.py on a
tiny random config, transformers 5.24):

1. its self-attention calls ``ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, ...)``
   with ``**kwargs``, and every module between ``model(...)`` and that call forwards
   ``**kwargs`` (so ``prior=`` reaches the attention function, also through the task
   heads such as ``*ForSequenceClassification``);
2. each layer owns its attention module (ALBERT shares one module across layers, so a
   prior in "layer 0 only" cannot be expressed; it is left out);
3. it is an encoder (bidirectional self-attention, no cache).

Architectures in :data:`ADAPTED` fail condition 1 (their attention is their own code and
their modules drop ``**kwargs``); they take the prior through a per-architecture adapter
instead (``priorkit/attention/adapters/``: a routing hook for ``prior=`` and a replacement
``forward`` of the primed self-attention modules that keeps the model's own maths).

The table maps ``config.model_type`` to the ModuleList of layers (relative to
``model.base_model``) and the attention module inside one layer.
"""
from __future__ import annotations

from torch import nn

from .errors import UnsupportedModelError

_BERT_LIKE = ("encoder.layer", "attention.self")

#: model_type -> (path of the layer list under base_model, path of the attention module in a layer)
ARCHITECTURES: dict[str, tuple[str, str]] = {
    "bert": _BERT_LIKE,
    "roberta": _BERT_LIKE,
    "electra": _BERT_LIKE,
    "xlm-roberta": _BERT_LIKE,
    "xlm-roberta-xl": _BERT_LIKE,
    "camembert": _BERT_LIKE,
    "ernie": _BERT_LIKE,
    "data2vec-text": _BERT_LIKE,
    "roc_bert": _BERT_LIKE,
    "xmod": _BERT_LIKE,
    "bert-generation": _BERT_LIKE,
    "mobilebert": _BERT_LIKE,
    "layoutlm": _BERT_LIKE,
    "markuplm": _BERT_LIKE,
    "splinter": _BERT_LIKE,
    "esm": _BERT_LIKE,
    "distilbert": ("transformer.layer", "attention"),
    "modernbert": ("layers", "attn"),
    "nomic_bert": ("layers", "self_attn"),
    "eurobert": ("layers", "self_attn"),
    "mpnet": ("encoder.layer", "attention.attn"),
    "deberta-v2": ("encoder.layer", "attention.self"),
}

#: model types reached through an adapter of priorkit/attention/adapters/ (one file each)
ADAPTED = ("mpnet", "deberta-v2")

#: attention implementations whose layers the dispatcher can fall back to
BASE_IMPLEMENTATIONS = ("sdpa", "eager")


def supported_architectures() -> list[str]:
    """The ``model_type`` values ``enable_prior_attention`` accepts, sorted."""
    return sorted(ARCHITECTURES)


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """The self-attention module of every layer, in order (index = layer number).

    Raises UnsupportedModelError, listing the supported architectures, for any other model.
    """
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if model_type not in ARCHITECTURES:
        raise UnsupportedModelError(
            f"{type(model).__name__} (model_type={model_type!r}) is not supported by "
            f"enable_prior_attention. Supported model types: {', '.join(supported_architectures())}. "
            "ALBERT is excluded because its layers share one attention module; the other models neither "
            "route attention through transformers' AttentionInterface nor have an adapter in "
            "priorkit/attention/adapters/ (docs/attention.md, 'Supported architectures')."
        )
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        raise UnsupportedModelError(
            f"{type(model).__name__} is configured as a decoder (is_decoder/add_cross_attention); "
            "prior-guided attention is for bidirectional encoders only."
        )
    layers_path, attn_path = ARCHITECTURES[model_type]
    base = getattr(model, "base_model", model)
    try:
        layers = base.get_submodule(layers_path)
        return [layer.get_submodule(attn_path) for layer in layers]
    except AttributeError as err:
        raise UnsupportedModelError(
            f"{type(model).__name__} (model_type={model_type!r}) has no '{layers_path}[i].{attn_path}' "
            f"module ({err}); this transformers version laid the model out differently from the one "
            "priorkit was tested with."
        ) from err
