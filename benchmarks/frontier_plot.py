"""Issue 30's frontier as a picture: every setting measured on the kept 10% BC5CDR models (the
post-hoc families of docs/archive/issue-30.md 2c-2e, the outside-weight students of 2f, the edge-noise
students of 2g, the mixes, joins and ensembles of 2h and the document pass of 2i), devel F1
against devel recall on the mentions the dictionary does not tag, with no knowledge's recall
there as a line.  It reads the result files the claims blocks read; nothing is trained or scored.

    python benchmarks/frontier_plot.py --out docs/results/bc5cdr-knowledge-frontier.png
"""
from __future__ import annotations

import argparse
from pathlib import Path

from lab.claims import mix
from lab.claims import outside
from lab.claims.decoding import _mean
from lab.claims.tables import Results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="docs/results", help="the folder of result files")
    ap.add_argument("--split", default="eval", choices=["eval", "test"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = Results(Path(args.results))
    families = outside.all_families(res)
    fig, ax = plt.subplots(figsize=(13, 6))
    markers = "osD^vP*X"
    colors = plt.get_cmap("tab20").colors
    for i, (name, fam) in enumerate(families.items()):
        pts = [(_mean(v[args.split], "recall_other"), _mean(v[args.split], "f1"))
               for v in fam.values() if args.split in v]
        if pts:
            ax.scatter(*zip(*pts), label=f"{name} ({len(pts)})", marker=markers[i % len(markers)], s=28, alpha=0.8,
                       color=colors[i % len(colors)])
    floor = mix.none_recall_outside(res, args.split)
    ax.axvline(floor, color="grey", linestyle="--", linewidth=1)
    ax.text(floor + 0.3, ax.get_ylim()[0] + 0.3, f"no knowledge: {floor:.1f}", color="grey", fontsize=8)
    split = "devel (800 sentences)" if args.split == "eval" else "test (2,000 sentences)"
    ax.set_xlabel(f"recall outside the dictionary, {split}, mean of 5 seeds")
    ax.set_ylabel(f"entity F1, {split}")
    ax.set_title("BC5CDR, 10% gold: F1 against blindness, every setting measured")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"{args.out}: {sum(len(f) for f in families.values())} settings in {len(families)} families")


if __name__ == "__main__":
    main()
