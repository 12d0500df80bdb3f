"""The dictionary-only baseline of BC5CDR NER: precision, recall and F1 of the concept
matcher alone (no model), entity level with seqeval, per type and overall.

Each match of the provider becomes an entity of its group's type (mesh:C -> Disease,
mesh:D -> Chemical, hpo -> Disease; a mention in several groups takes the first of
--types); the split and the scorer are those of the trained models
(pipelines/bc5cdr-features.yaml), so the figures sit beside theirs.

    .venv/bin/python benchmarks/dictionary_baseline.py [--split test] [--sample N] [--source hpo+mesh] [--json out.json]

``--sample N`` scores the same fixed sample of the split as a pipeline's ``data.test: {sample: N}``
(drawn with ``--sample-seed``, default 0, as ``sample_seed`` is).
"""
from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import priorkit  # noqa: E402
from priorkit.features.baseline import BC5CDR_TYPES, dictionary_scores  # noqa: E402
from priorkit.pipeline.config import DataSource  # noqa: E402
from priorkit.pipeline.data import read_source, slice_examples  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="test", choices=["train", "devel", "test"])
    ap.add_argument("--source", default="hpo+mesh", help="ontology source(s), e.g. hpo, mesh, hpo+mesh")
    ap.add_argument("--types", default=json.dumps(BC5CDR_TYPES),
                    help="JSON group -> entity type, in priority order (default: %(default)s)")
    ap.add_argument("--sample", type=int, help="a fixed sample of N sentences, as data.<split>.sample draws it")
    ap.add_argument("--sample-seed", type=int, default=0)
    ap.add_argument("--json", help="also write the scores here")
    args = ap.parse_args()
    types = json.loads(args.types)
    src = DataSource(source="bc5cdr", split=args.split, sample=args.sample, sample_seed=args.sample_seed)
    examples, origin = read_source(src)
    examples = slice_examples(examples, src)
    provider = priorkit.get_provider("ontology", source=args.source)
    t0 = time.perf_counter()
    provider.ensure_loaded()
    loaded = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = dictionary_scores(provider, examples, types)
    seconds = time.perf_counter() - t0
    print(f"BC5CDR {args.split} ({len(examples)} sentences, {origin}); ontology source={args.source}; "
          f"types {types}; load {loaded:.1f}s, matching + scoring {seconds:.1f}s")
    print(f"{'':10} {'precision':>9} {'recall':>9} {'f1':>9}")
    for name in ("overall", *sorted({k.split('_', 1)[1] for k in scores if k.startswith("f1_")})):
        p, r, f = ((scores["precision"], scores["recall"], scores["f1"]) if name == "overall" else
                   (scores[f"precision_{name}"], scores[f"recall_{name}"], scores[f"f1_{name}"]))
        print(f"{name:10} {p:9.4f} {r:9.4f} {f:9.4f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"split": args.split, "sample": args.sample, "sample_seed": args.sample_seed, "source": args.source,
                       "types": types, "scores": scores}, fh, indent=2)


if __name__ == "__main__":
    main()
