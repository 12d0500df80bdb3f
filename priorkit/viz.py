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
