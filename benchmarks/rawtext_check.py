"""Issue 45's target: the same model on BC5CDR's text rebuilt as raw text, scored by character
offsets, within 1.0 F1 of its score on the CoNLL input.

The default split is devel: the test split is sealed (docs/pipelines.md, "The sealed test split"),
and this gap between two input forms of one model needs no test read.

Both sides get the same documents (runs of ``--per-document`` consecutive sentences, the first
``--sentences`` of the split): the CoNLL side as ``-DOCSTART-``-separated words
(:func:`~priorkit.evaluation.offsets.write_chunked_conll`: the model reads the corpus's words),
the raw side as detokenized text (:func:`~priorkit.evaluation.offsets.write_rebuilt_documents`:
the model reads what ``segment()`` makes of it).  Each is tagged with ``tag_documents``, written
as JSON Lines and scored by offsets against its own gold (:func:`score_files`).

    .venv/bin/python benchmarks/rawtext_check.py MODEL_FOLDER [--split data/bc5cdr/devel.tsv]
                                   [--sentences N] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--split", default=str(ROOT / "data" / "bc5cdr" / "devel.tsv"))
    parser.add_argument("--sentences", type=int, default=0, help="the first N sentences (0: all)")
    parser.add_argument("--per-document", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    import priorkit
    from priorkit.documents import read_documents, write_documents
    from priorkit.evaluation.offsets import score_files, write_chunked_conll, write_rebuilt_documents

    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="rawtext-check-"))
    split = Path(args.split)
    if args.sentences:
        head = tmp / split.name
        blocks = [b for b in split.read_text().split("\n\n") if b.strip()][:args.sentences]
        head.write_text("\n\n".join(blocks) + "\n\n")
        split = head
    sides = {"conll": write_chunked_conll(split, tmp / "docs.conll", args.per_document),
             "raw": write_rebuilt_documents(split, tmp / "docs.jsonl", args.per_document)}
    tagger = priorkit.load_model(args.model)
    out = {}
    for side, gold in sides.items():
        start = time.perf_counter()
        tagged = tmp / f"tagged-{side}.jsonl"
        write_documents(tagger.tag_documents(read_documents(gold), batch_size=args.batch_size), tagged)
        scores = score_files(gold, tagged).as_dict()
        scores["seconds"] = round(time.perf_counter() - start, 1)
        out[side] = scores
        print(f"{side:6s} F1 {100 * scores['overall']['f1']:.2f}  P {100 * scores['overall']['precision']:.2f}  "
              f"R {100 * scores['overall']['recall']:.2f}  ({scores['seconds']} s)", flush=True)
    gap = 100 * (out["conll"]["overall"]["f1"] - out["raw"]["overall"]["f1"])
    print(f"CoNLL minus raw text: {gap:+.2f} F1 (target: within 1.0)")
    record = {"command": "python benchmarks/rawtext_check.py " + " ".join(sys.argv[1:]), "model": args.model,
              "split": os.path.relpath(args.split, ROOT), "sentences": args.sentences or "all", "per_document": args.per_document,
              "date": datetime.date.today().isoformat(), "machine": f"{os.cpu_count()}-core CPU VM",
              "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
              "scores": out, "conll_minus_raw_f1": round(gap, 2)}
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
