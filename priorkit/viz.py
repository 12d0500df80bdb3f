"""Plots: prior heat-maps (and, in pipelines, metric curves)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def plot_prior(matrix: np.ndarray, tokens: Sequence[str], out: str | Path, title: str = "prior") -> Path:
    """Heat-map of an (L, L) prior with token labels on both axes, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    L = len(tokens)
    if matrix.shape != (L, L):
        raise ValueError(f"matrix shape {matrix.shape} does not match {L} tokens")
    size = max(4.0, 0.35 * L + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=max(1.0, float(np.nanmax(matrix))))
    ax.set_xticks(range(L), labels=list(tokens), rotation=90, fontsize=8)
    ax.set_yticks(range(L), labels=list(tokens), fontsize=8)
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
