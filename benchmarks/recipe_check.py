"""Does a recipe folder tag as its sweep arm scored?  (issue 45; docs/tagging.md)

Exports the arms ``--arms`` (default st-mix, st-mix-doc) of a finished sweep at one fraction and
seed into recipe folders, then tags the pipeline's test split with each folder through the
command line (``priorkit predict FOLDER INPUT.conll``) and scores the sampled sentences against
their gold tags, beside the arm's own score (its ``metrics.json``):

* an arm without the document pass reads the test sample alone (the sweep's input, one sentence
  at a time): ``test-sample.conll``;
* an arm with it reads the whole test split in order as one document (the context the sweep's
  pass read: ``training.data.document_context``), and the sampled positions are scored.

Also: the same with long sentences cut at the token limit as the sweep did (the Python API,
``recipe.windows = False``), the sentences longer than the limit, the share of predicted
entities that carry a concept ID, the folder's size, and a copy of the folder elsewhere tagging
the first sentences the same.  One JSON file of results (``--results``).

    .venv/bin/python benchmarks/recipe_check.py pipelines/bc5cdr-mix.yaml \\
        --seed 0 --set 'evaluate=[test]' --out-dir models --results docs/results/recipe-check-seed0.json \\
        --ledger docs/results/test-reads.csv --decision "..."

A sealed pipeline (``evaluate: [eval]``, issue 48) exports its arms' test scores with
``--set evaluate=[test]``; the test read is then recorded in the ledger.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import priorkit  # noqa: E402
from priorkit.evaluation.export import export_arm, pipeline_config  # noqa: E402
from priorkit.inference.recipe_folder import folder_bytes  # noqa: E402
from priorkit.metrics import ner_metrics  # noqa: E402
from priorkit.training.data import read_source, sample_indices  # noqa: E402
from priorkit.training.layout import METRICS_FILE  # noqa: E402
from priorkit.training.plan import RunPlan  # noqa: E402


def _write_conll(path: Path, examples: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for e in examples:
            fh.write("".join(f"{w}\t{t}\n" for w, t in zip(e["words"], e["tags"])) + "\n")


def _predict_cli(folder: Path, conll: Path, out: Path) -> tuple[list[list[str]], list[list[dict]], float]:
    t0 = time.perf_counter()
    cmd = [str(ROOT / ".venv" / "bin" / "priorkit"), "-q", "predict", str(folder), str(conll),
           "--input-format", "conll", "--out", str(out), "--force"]
    subprocess.run(cmd, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return [r["tags"] for r in rows], [r["entities"] for r in rows], time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipeline")
    ap.add_argument("--arms", default="st-mix,st-mix-doc")
    ap.add_argument("--fraction", type=float, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out-dir", default="models", help="where the recipe folders go (<pipeline>-<arm>-seedS)")
    ap.add_argument("--results", default=None, help="the results JSON (default: docs/results/recipe-check-seedS.json)")
    ap.add_argument("--copy-sentences", type=int, default=300, help="sentences the copied folder tags again")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="pipeline overrides (a sealed pipeline: evaluate=[test] to export the arm's test scores)")
    ap.add_argument("--ledger", default=None, help="record this read of the test split in this ledger "
                    "(docs/results/test-reads.csv) with --decision")
    ap.add_argument("--decision", default=None, help="the question this test read answers (with --ledger)")
    args = ap.parse_args()
    if (args.ledger is None) != (args.decision is None):
        ap.error("--ledger and --decision go together")
    load_before = os.getloadavg()
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    arms = [a for a in args.arms.split(",") if a]
    cfg, fraction, seed = pipeline_config(args.pipeline, arms[0], args.fraction, args.seed, args.overrides)
    src = cfg.data.test
    every, _ = read_source(src, cfg.where("data.test"))
    keep = sample_indices(len(every), src)
    positions = list(range(len(every))) if keep is None else [int(i) for i in keep]
    sample = [every[p] for p in positions]
    gold = [list(e["tags"]) for e in sample]
    work = Path(tempfile.mkdtemp(prefix="recipe-check-"))
    _write_conll(work / "test-sample.conll", sample)
    _write_conll(work / "test-all.conll", every)
    out = {"pipeline": args.pipeline, "fraction": fraction, "seed": seed, "test_sentences": len(every),
           "sampled": len(sample), "arms": {}}
    for arm in arms:
        folder = Path(args.out_dir) / f"{cfg.name}-{arm}-seed{seed}"
        t0 = time.perf_counter()
        info = export_arm(cfg, arm, fraction, seed, folder, force=True, command=" ".join(sys.argv))
        export_s = time.perf_counter() - t0
        sweep_f1 = json.loads((RunPlan(cfg, arm, None, fraction, seed).run_dir / METRICS_FILE).read_text())[
            "metrics"]["test"]["f1"]
        document = any(s["kind"] == "document" for s in info["steps"])
        conll = work / ("test-all.conll" if document else "test-sample.conll")
        tags, ents, predict_s = _predict_cli(folder, conll, work / f"{arm}.jsonl")
        if document:
            tags, ents = [tags[p] for p in positions], [ents[p] for p in positions]
        cli = ner_metrics(gold, tags)
        recipe = priorkit.load_model(folder)
        recipe.windows = False  # long sentences cut at the token limit, as the sweep's models read them
        words = [e["words"] for e in (every if document else sample)]
        cut = [r["tags"] for r in recipe.predict(words)]
        if document:
            cut = [cut[p] for p in positions]
        budget = recipe.max_length
        tok = next(iter(recipe.members.values())).tokenizer
        long = [i for i, e in enumerate(sample) if len(tok(e["words"], is_split_into_words=True)["input_ids"]) > budget]
        flat = [e for row in ents for e in row]
        with_ids = [e for e in flat if e.get("concept_ids")]
        by_source: dict[str, list[int]] = {}
        for e in flat:
            by_source.setdefault(e.get("source", "model"), [0, 0])
            by_source[e.get("source", "model")][0] += 1
            by_source[e.get("source", "model")][1] += bool(e.get("concept_ids"))
        copy = Path(tempfile.mkdtemp(prefix="recipe-copy-")) / folder.name
        shutil.copytree(folder, copy)
        first = words[:args.copy_sentences]
        same = [r["tags"] for r in priorkit.load_model(copy).predict(first)] == \
            [r["tags"] for r in priorkit.load_model(folder).predict(first)]
        shutil.rmtree(copy.parent)
        out["arms"][arm] = {
            "folder": str(folder), "steps": info["steps"], "folder_bytes": folder_bytes(folder),
            "dictionary_bytes": sum(f["bytes"] for f in (info.get("data") or {}).get("files") or []),
            "export_seconds": round(export_s, 1), "predict_seconds": round(predict_s, 1),
            "input": conll.name, "sweep_f1": sweep_f1, "cli_f1": cli["f1"], "cli_precision": cli["precision"],
            "cli_recall": cli["recall"], "cut_f1": ner_metrics(gold, cut)["f1"],
            "matches_sweep_4_digits": f"{cli['f1']:.4f}" == f"{sweep_f1:.4f}",
            "cut_matches_sweep_4_digits": f"{ner_metrics(gold, cut)['f1']:.4f}" == f"{sweep_f1:.4f}",
            "sampled_longer_than_limit": len(long), "token_limit": budget,
            "sentences_whose_tags_differ_from_cut": sum(a != b for a, b in zip(tags, cut)),
            "entities": len(flat), "with_concept_ids": len(with_ids),
            "share_with_concept_ids": len(with_ids) / len(flat) if flat else None,
            "by_source": {k: {"entities": v[0], "with_concept_ids": v[1]} for k, v in sorted(by_source.items())},
            "copy_tags_the_same": same, "copy_sentences": len(first),
        }
        print(f"{arm}: sweep F1 {sweep_f1:.4f}, predict (CLI, windows) {cli['f1']:.4f}, cut {out['arms'][arm]['cut_f1']:.4f}; "
              f"{len(with_ids)}/{len(flat)} entities with concept IDs; folder {folder_bytes(folder) / 1e6:.0f} MB; "
              f"copy tags the same: {same}", flush=True)
    out["machine"] = f"{platform.node()} ({os.cpu_count()} CPUs), {platform.platform()}"
    out["started"] = started
    out["load_before"] = [round(x, 2) for x in load_before]
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out["command"] = " ".join(["python", *sys.argv])
    results = Path(args.results or ROOT / "docs" / "results" / f"recipe-check-seed{seed}.json").resolve()
    if args.ledger:
        from priorkit.evaluation import ledger

        row = ledger.append_read(args.ledger, {
            "read": ledger.next_read(args.ledger), "date": ledger.today(), "commit": ledger.current_commit(),
            "pipeline": args.pipeline, "name": cfg.name, "settings": " ".join(arms),
            "scored": "the exported recipe folders through priorkit predict (no training, no choice)",
            "fractions": f"{fraction:g}", "seeds": str(seed), "decision": args.decision,
            "result": str(results.relative_to(ROOT)) if results.is_relative_to(ROOT) else str(results),
            "earlier": " ".join(r["read"] for r in ledger.earlier_reads(args.ledger, cfg.name, arms))})
        out["ledger_read"] = int(row["read"])
    results.write_text(json.dumps(out, indent=2) + "\n")
    shutil.rmtree(work)
    print(f"wrote {results}")


if __name__ == "__main__":
    main()
