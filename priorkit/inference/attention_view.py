"""What the prior did to a trained model's attention: the matrices and a per-head summary.

``Predictor.attention(text_a, text_b, layers=..., heads=..., off=(...))`` returns
:class:`AttentionMaps`, the weights of the model's real forward pass (captured by
:func:`priorkit.attention.capture.capture_attention`) on the batch the model's one
collator builds (every channel's tensors, as in training and ``predict``).  A channel
switched off (``off=("features",)``; ``prior=False`` is ``off=("attention",)``) has its
tensors left out of the call, so the model runs as it would without that channel: the
stock attention for the attention prior (what every mode computes with the prior
switched off: P = 1 for ``multiply``, gate or strength 0 for ``gate``, ``bias`` and
``learned_bias``), the stock embeddings for the token features.

The summary's measure (docs/show.md, "The summary"):

* the cells a prior *favours* in row i (query token i) are the keys j whose prior
  value is above the row's mean over the input's tokens, ``P[i, j] > mean_k P[i, k]``;
  rows where the prior is constant favour nothing and are left out;
* a head's *favoured mass* is the attention weight it puts on those cells, summed
  over the row and averaged over the counted rows (pooled over inputs);
  uniform attention would give the *share* of favoured cells;
* the *shift* is the favoured mass with the prior minus without it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..batch_keys import LOSS_ONLY
from ..errors import PriorkitError

#: a prior value counts as above its row's mean only by more than this (float noise)
TOLERANCE = 1e-6


@dataclasses.dataclass
class AttentionMaps:
    """Attention of chosen layers and heads for one input, as a NumPy array.

    ``weights[k, h]`` is layer ``layers[k]``, head ``heads[h]``: an (L, L) matrix whose
    row i is query token i's attention over the keys (rows sum to 1).  ``prior`` is the
    (L, L) prior the model was given (``None`` for a model trained without one), also
    when ``prior_on`` is False.
    """

    tokens: list[str]
    layers: tuple[int, ...]
    heads: tuple[int, ...]
    weights: np.ndarray  # (n_layers, n_heads, L, L) float32
    prior: np.ndarray | None  # (L, L) float32
    prior_on: bool
    tokens_in_input: int  # before truncation
    truncated: bool
    #: the model's channels whose tensors this forward pass had
    channels_on: tuple[str, ...] = ()

    def head(self, layer: int, head: int) -> np.ndarray:
        """The (L, L) matrix of one layer and head (model indices)."""
        if layer not in self.layers or head not in self.heads:
            raise PriorkitError(f"layer {layer} head {head} was not captured; captured layers "
                                f"{list(self.layers)}, heads {list(self.heads)}")
        return self.weights[self.layers.index(layer), self.heads.index(head)]


@dataclasses.dataclass
class HeadSummary:
    """One head's favoured mass with and without the prior, and its learned parameter."""

    layer: int
    head: int
    mass_with: float
    mass_without: float
    favoured_share: float  # what uniform attention would put on the favoured cells
    learned: float | None  # the head's trained gate / strength (None: the mode has none, or no prior here)
    learned_name: str | None  # the mode's label of it ("gate", "strength"; AttentionMode.learnable_label)
    #: attention moved by all the model's knowledge: half the summed |with - every channel off|
    #: per query token (0: the same attention, 1: none in common), averaged over the input's tokens
    moved: float = float("nan")

    @property
    def shift(self) -> float:
        return self.mass_with - self.mass_without

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "shift": self.shift}


@dataclasses.dataclass
class AttentionComparison:
    """The attention with every channel of the model on (``with_prior``), with every one off
    (``without_prior``: the stock model), with each one off alone (``off``, by channel name),
    the per-head summary and, per channel that has one, what it added at each token
    (``token_views``: the token features' matched groups and the size of the gated feature)."""

    with_prior: AttentionMaps
    without_prior: AttentionMaps
    summary: list[HeadSummary]
    mode: str | None
    prior_layers: tuple[int, ...]
    off: dict[str, AttentionMaps] = dataclasses.field(default_factory=dict)
    token_views: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def channels(self) -> tuple[str, ...]:
        return self.with_prior.channels_on

    @property
    def difference(self) -> np.ndarray:
        """with - without (every channel off), (n_layers, n_heads, L, L)."""
        return self.with_prior.weights - self.without_prior.weights


# --------------------------------------------------------------------------- the measure
def favoured_cells(prior: np.ndarray) -> np.ndarray:
    """(L, L) bool: ``P[i, j]`` above the mean of its row (see the module doc)."""
    prior = np.asarray(prior, dtype=np.float64)
    return prior > prior.mean(axis=-1, keepdims=True) + TOLERANCE


def favoured_mass(weights: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per head: the summed attention on favoured cells of every counted row.

    ``weights`` (H, L, L), ``prior`` (L, L) over the real tokens only.  Returns the sum
    over counted rows of each head's favoured mass (H,), the sum of the rows' favoured
    shares (a scalar array) and the number of counted rows, so that callers can pool inputs.
    """
    fav = favoured_cells(prior)
    rows = fav.any(axis=-1)
    if not rows.any():
        return np.zeros(weights.shape[0]), np.zeros(()), 0
    mass = (weights * fav).sum(axis=-1)[:, rows].sum(axis=-1)  # (H,)
    share = fav[rows].mean(axis=-1).sum()
    return mass, np.asarray(share), int(rows.sum())


# --------------------------------------------------------------------------- the model
def prior_settings(model: Any) -> dict | None:
    """The model's saved ``config.priorkit`` (mode, layers, heads, options), or None."""
    saved = getattr(model.config, "priorkit", None)
    return saved if isinstance(saved, dict) else None


def learned_values(model: Any) -> dict[int, tuple[str, dict[int, float]]]:
    """Layer -> (the mode's label of its learnable parameter: "gate", "strength", ...,
    {head: trained value}) for modes with a learnable parameter."""
    from ..attention.architectures import attention_modules
    from ..attention.mode import get_mode

    settings = prior_settings(model) or {}
    mode = get_mode(settings["mode"]) if settings.get("mode") else None
    if mode is None or mode.learnable is None:
        return {}
    index = {id(m): i for i, m in enumerate(attention_modules(model))}
    out: dict[int, tuple[str, dict[int, float]]] = {}
    for name, param in model.named_parameters():
        owner, pname = name.rpartition(".")[::2]
        if pname != mode.learnable:
            continue
        layer = index.get(id(model.get_submodule(owner)))
        if layer is None:
            continue
        heads = settings.get("heads") or list(range(param.numel()))
        values = param.detach().float().cpu().tolist()
        out[layer] = (mode.label(), dict(zip(heads, values)))
    return out


def _indices(what: str, asked: Iterable[int] | int | None, count: int, default: Sequence[int]) -> tuple[int, ...]:
    if asked is None:
        return tuple(default)
    if isinstance(asked, int):
        asked = [asked]
    out = []
    for i in asked:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < count:
            raise PriorkitError(f"{what} {i!r} is out of range: the model has {what}s 0-{count - 1}")
        if int(i) not in out:
            out.append(int(i))
    if not out:
        raise PriorkitError(f"no {what} chosen; the model has {what}s 0-{count - 1}")
    return tuple(sorted(out))


def choose_layers_heads(model: Any, layers: Any = None, heads: Any = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Checked layer and head indices; defaults: the layers with the prior (else 0), every head."""
    from ..attention.architectures import attention_modules

    n_layers, n_heads = len(attention_modules(model)), int(model.config.num_attention_heads)
    settings = prior_settings(model)
    default_layers = (settings or {}).get("layers") or [0]
    return (_indices("layer", layers, n_layers, default_layers),
            _indices("head", heads, n_heads, range(n_heads)))


def capture_batch(model: Any, batch: dict, layers: Sequence[int], heads: Sequence[int], prior: bool = True,
                  leave_out: Iterable[str] = ()) -> np.ndarray:
    """(B, n_layers, n_heads, L, L) attention of one batch, from the model's own forward pass;
    ``leave_out``: batch keys not passed (a channel switched off), ``prior=False`` adds ``prior``;
    ``labels`` and the loss's own keys are never passed."""
    from ..attention.capture import capture_attention

    drop = {"labels", *LOSS_ONLY, *leave_out, *(() if prior else ("prior",))}
    inputs = {k: v for k, v in batch.items() if k not in drop}
    device = next(model.parameters()).device
    inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
    with capture_attention(model, layers) as recorder:
        model(**inputs)
        got = recorder.take()
    head_index = list(heads)
    return np.stack([got[i][:, head_index].numpy() for i in layers], axis=1)


# --------------------------------------------------------------------------- one input
def _batch(predictor: Any, text_a: Any, text_b: str | None) -> tuple[Any, dict, dict]:
    """(the example, the batch's tokenisation, the model's inputs) of one input, through the
    model's one collator."""
    example = predictor.examples([text_a if text_b is None else (text_a, text_b)])[0]
    encoding, inputs = predictor.collator().encode([example])
    return example, encoding, inputs


def _tokens_in_input(predictor: Any, example: dict) -> int:
    words = "words" in example
    a = [example["words"] if words else example["text_a"]]
    b = None if words or example.get("text_b") is None else [example["text_b"]]
    return len(predictor.tokenizer(a, b, is_split_into_words=words, truncation=False, verbose=False)["input_ids"][0])


def _switched_off(predictor: Any, off: Any) -> set[str]:
    names = [c.name for c in predictor.channels]
    if off == "all":
        return set(names)
    off = {off} if isinstance(off, str) else set(off or ())
    unknown = sorted(off - set(names))
    if unknown:
        raise PriorkitError(f"the model has no channel {', '.join(unknown)}; its channels: {', '.join(names) or 'none'}")
    return off


def _maps(predictor: Any, encoding: Any, inputs: dict, full: int, layers: tuple[int, ...], heads: tuple[int, ...],
          off: set[str]) -> AttentionMaps:
    keys = {k for c in predictor.channels if c.name in off for k in c.batch_keys}
    weights = capture_batch(predictor.model, inputs, layers, heads, leave_out=keys)[0]
    matrix = inputs["prior"][0].float().numpy() if "prior" in inputs else None
    on = tuple(c.name for c in predictor.channels if c.name not in off)
    return AttentionMaps(tokens=encoding.tokens(0), layers=layers, heads=heads, weights=weights, prior=matrix,
                         prior_on=bool(matrix is not None and "attention" in on), tokens_in_input=full,
                         truncated=full > predictor.max_length, channels_on=on)


def attention_maps(predictor: Any, text_a: Any, text_b: str | None = None, *, layers: Any = None,
                   heads: Any = None, prior: bool = True, off: Any = ()) -> AttentionMaps:
    """See :meth:`priorkit.inference.Predictor.attention`."""
    layers, heads = choose_layers_heads(predictor.model, layers, heads)
    switched = _switched_off(predictor, off)
    if not prior and predictor.channel("attention") is not None:
        switched.add("attention")
    example, encoding, inputs = _batch(predictor, text_a, text_b)
    return _maps(predictor, encoding, inputs, _tokens_in_input(predictor, example), layers, heads, switched)


def _moved(on: np.ndarray, off: np.ndarray) -> np.ndarray:
    """(n_layers, n_heads): half the summed |on - off| per query row, averaged over rows."""
    return 0.5 * np.abs(on - off).sum(-1).mean(-1)


def compare(predictor: Any, text_a: Any, text_b: str | None = None, *, layers: Any = None,
            heads: Any = None) -> AttentionComparison:
    """The attention with every channel on, with every one off and with each one off alone for
    one input; the summary per head; what each channel added per token (see AttentionComparison).

    The summary's favoured masses compare the attention with every channel on against the same
    model with only the attention prior off (the other channels stay on), so ``shift`` is the
    attention prior's own doing; ``moved`` compares with every channel off."""
    layers, heads = choose_layers_heads(predictor.model, layers, heads)
    example, encoding, inputs = _batch(predictor, text_a, text_b)
    full = _tokens_in_input(predictor, example)
    names = [c.name for c in predictor.channels]
    on = _maps(predictor, encoding, inputs, full, layers, heads, set())
    stock = _maps(predictor, encoding, inputs, full, layers, heads, set(names))
    each = {name: stock if len(names) == 1 else _maps(predictor, encoding, inputs, full, layers, heads, {name})
            for name in names}
    off = each.get("attention", stock)
    moved = _moved(on.weights, stock.weights)
    learned = learned_values(predictor.model)
    summary = []
    for k, layer in enumerate(on.layers):
        if on.prior is not None:
            mass_on, share, rows = favoured_mass(on.weights[k], on.prior)
            mass_off, _, _ = favoured_mass(off.weights[k], on.prior)
        else:
            rows = 0
        kind, values = learned.get(layer, (None, {}))
        for h, head in enumerate(on.heads):
            summary.append(HeadSummary(
                layer=layer, head=head,
                mass_with=float(mass_on[h] / rows) if rows else float("nan"),
                mass_without=float(mass_off[h] / rows) if rows else float("nan"),
                favoured_share=float(share / rows) if rows else float("nan"),
                learned=values.get(head), learned_name=kind if head in values else None,
                moved=float(moved[k, h])))
    views = {}
    for channel in predictor.channels:
        view = channel.token_view(predictor.model, inputs)
        if view is not None:
            views[channel.name] = view
    settings = prior_settings(predictor.model) or {}
    return AttentionComparison(on, stock, summary, settings.get("mode"), tuple(settings.get("layers") or ()),
                               off=each, token_views=views)
