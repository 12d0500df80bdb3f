"""Plots: prior heat-maps (and, in pipelines, metric curves)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


#: the figure's longest side in inches (x 120 dpi: at most 2,040 pixels)
MAX_INCHES = 16.0
#: above this many tokens the axes show positions, not token labels
MAX_LABELS = 80


def plot_prior(matrix: np.ndarray, tokens: Sequence[str], out: str | Path, title: str = "prior") -> Path:
    """Heat-map of an (L, L) prior with token labels on both axes, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L = len(tokens)
    if matrix.shape != (L, L):
        raise ValueError(f"matrix shape {matrix.shape} does not match {L} tokens")
    size = min(MAX_INCHES, max(4.0, 0.35 * L + 2))  # at most MAX_INCHES x 120 dpi pixels a side
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=max(1.0, float(np.nanmax(matrix))),
                   interpolation="nearest")
    if L <= MAX_LABELS:
        ax.set_xticks(range(L), labels=list(tokens), rotation=90, fontsize=8)
        ax.set_yticks(range(L), labels=list(tokens), fontsize=8)
    else:  # token labels would overlap: token positions instead
        ax.set_xlabel("token")
        ax.set_ylabel("token")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


#: at most this many (layer, head) rows in the attention grid: beyond, the panels get unreadable
MAX_GRID_ROWS = 24


def plot_attention_grid(result, out: str | Path, title: str = "attention") -> Path:
    """One row per (layer, head): the prior, attention with the prior, without it, the difference.

    ``result`` is a :class:`priorkit.inference.attention_view.AttentionComparison`.  The
    figure's longest side is at most ``MAX_INCHES`` (as :func:`plot_prior`): panels
    shrink as rows are added, and token labels are drawn only where they fit.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    on, off = result.with_prior, result.without_prior
    rows = [(k, h) for k in range(len(on.layers)) for h in range(len(on.heads))]
    if len(rows) > MAX_GRID_ROWS:
        raise ValueError(f"{len(rows)} (layer, head) rows do not fit one figure (at most {MAX_GRID_ROWS}); "
                         "choose fewer with --layers / --heads")
    L = len(on.tokens)
    panel = min(4.0, (MAX_INCHES - 1.0) / max(len(rows), 4))
    fig, axes = plt.subplots(len(rows), 4, figsize=(panel * 4 + 1.0, panel * len(rows) + 1.0), squeeze=False)
    diff = on.weights - off.weights
    span = max(float(np.abs(diff).max()), 1e-6)
    labels = L <= 40 and panel >= 2.5
    learned = {(s.layer, s.head): s for s in result.summary}
    prior = on.prior if on.prior is not None else np.ones((L, L), dtype=np.float32)
    channels = tuple(getattr(result, "channels", ()) or ())
    with_name, off_name = ("with prior", "prior off") if channels in ((), ("attention",)) else \
        (f"with {' + '.join(channels)}", "all off")
    for r, (k, h) in enumerate(rows):
        layer, head = on.layers[k], on.heads[h]
        s = learned.get((layer, head))
        extra = f", {s.learned_name} {s.learned:.2f}" if s is not None and s.learned is not None else ""
        shift = f"shift {s.shift:+.3f}" if s is not None and np.isfinite(s.shift) else ""
        panels = [(prior, "viridis", 0.0, max(1.0, float(np.nanmax(prior))), "prior"),
                  (on.weights[k, h], "magma", 0.0, None, with_name),
                  (off.weights[k, h], "magma", 0.0, None, off_name),
                  (diff[k, h], "RdBu_r", -span, span, f"difference {shift}")]
        for c, (matrix, cmap, lo, hi, name) in enumerate(panels):
            ax = axes[r, c]
            if hi is None:
                hi = max(float(on.weights[k, h].max()), float(off.weights[k, h].max()), 1e-6)
            ax.imshow(matrix, cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
            ax.set_title(name if r == 0 or c == 3 else "", fontsize=8)
            if labels:
                ax.set_xticks(range(L), labels=list(on.tokens), rotation=90, fontsize=6)
                ax.set_yticks(range(L), labels=list(on.tokens), fontsize=6)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
            if c == 0:
                ax.set_ylabel(f"layer {layer} head {head}{extra}", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
