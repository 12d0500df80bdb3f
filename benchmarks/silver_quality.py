"""How good the silver labels of self-training are: each store of teacher labels scored against
the hidden gold tags of the text it labelled (BC5CDR train, whose rest is the unlabelled text
at 10%; no training, no model).

Per store (a ``runs/<sweep>/silver/teacher-*`` folder; ``labeller.json`` names the teacher):
entity precision and recall of the labels (unknown words ``?`` read as ``O``), and where the
gold entities the labels miss went: every word a confident ``O`` (the student is taught the
entity is none), every word unknown (out of the student's loss), or mixed (a wrong boundary or
type, or partly unknown).

    python benchmarks/silver_quality.py PIPELINE STORE [STORE ...] [--out docs/results/NAME.csv]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from seqeval.metrics.sequence_labeling import get_entities

from priorkit.config import load_config
from priorkit.training.data import load_data
from priorkit.evaluation.sweep import write_csv
from priorkit.supervision.silver.label import sentence_digest
from priorkit.supervision.silver.recipe import UNKNOWN
from priorkit.supervision.silver.store import SHARD_GLOB


def store_quality(store: Path, gold: dict[str, list[str]]) -> dict:
    """Counts of one store's labels against ``gold`` (sentence digest -> gold tags)."""
    meta = json.loads((store / "labeller.json").read_text(encoding="utf-8"))
    c = dict.fromkeys(("sentences", "silver", "gold", "right", "missed_all_O", "missed_all_unknown",
                       "missed_mixed", "words", "words_unknown"), 0)
    for shard in sorted(store.glob(SHARD_GLOB)):
        for line in shard.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            tags = gold.get(row["d"])
            if tags is None:  # text that is not in the gold file (another split)
                continue
            t = row["t"]
            labels = set(get_entities(["O" if x == UNKNOWN else x for x in t]))
            truth = set(get_entities(tags))
            c["sentences"] += 1
            c["silver"] += len(labels)
            c["gold"] += len(truth)
            c["right"] += len(labels & truth)
            for _, s, e in truth - labels:
                words = t[s:e + 1]
                key = ("missed_all_O" if all(w == "O" for w in words)
                       else "missed_all_unknown" if all(w == UNKNOWN for w in words) else "missed_mixed")
                c[key] += 1
            c["words"] += len(t)
            c["words_unknown"] += sum(x == UNKNOWN for x in t)
    return {"store": store.name, "teacher": meta.get("teacher", ""), "threshold": meta.get("threshold"),
            "entity_threshold": meta.get("entity_threshold"), "merge": meta.get("merge"), **c,
            "precision": round(100 * c["right"] / max(c["silver"], 1), 2),
            "recall": round(100 * c["right"] / max(c["gold"], 1), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    train = load_data(load_config(args.pipeline))["train"].examples
    gold = {sentence_digest(e["words"]): e["tags"] for e in train}
    rows = [store_quality(store, gold) for store in args.stores]
    for r in rows:
        print(f"{r['teacher']}: P {r['precision']} R {r['recall']}; gold entities missed: "
              f"{r['missed_all_O']} all O, {r['missed_all_unknown']} all unknown, {r['missed_mixed']} mixed "
              f"(of {r['gold']})", flush=True)
    if args.out:
        write_csv(rows, Path(args.out))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
