"""Where a token-classification sweep's gain comes from (docs/pipelines.md, "Inside and outside
the dictionary"): per arm, precision, recall, and recall on the gold entities the dictionary
tags exactly and on the others, with the dictionary alone as a row.

The dictionary is ``sweep.dictionary`` or, by default, the file prior's provider when it has
concept matches (its matches typed by the silver labels' map, else the pipeline's
``task.dictionary_types``, kept to the task's entity types).  Everything is read from the runs' saved
``predictions-<split>.jsonl``; the split's words come from the pipeline's data.

:func:`blind_spots` names the arms that find fewer of the other entities than the baseline
(knowledge that blinds the model where the dictionary is silent); the section and the sweep's
console output end with those lines.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Sequence

from ..stats import paired
from ..config import PipelineConfig, PosthocConfig
from .dictionary_recall import dictionary_recall
from ..training.predictions import read_predictions

CSV_FILE = "results-dictionary.csv"
DICTIONARY_ROW = "dictionary alone"
BLIND_MARGIN = 1.0  # points of recall outside the dictionary below the baseline's (paired mean) that warn


def dictionary_of(cfg: PipelineConfig) -> PosthocConfig | None:
    """The sweep's dictionary (None: none to report against)."""
    if cfg.task.type != "token-classification":
        return None
    if cfg.sweep.dictionary is not None:  # a DictionaryConfig: read as an arm's dictionary
        d = cfg.sweep.dictionary
        return PosthocConfig(provider=d.provider, params=dict(d.params),
                             types=d.types if d.types is not None else cfg.task.dictionary_types)
    prior = cfg.prior
    if prior is None or prior.provider is None:
        return None
    import priorkit

    try:
        provider = priorkit.get_provider(prior.provider, **(prior.params or {}))
    except Exception:  # noqa: BLE001 -- a report never fails on its optional section
        return None
    if not provider.supports_matches:
        return None
    types = prior.silver.types if prior.silver is not None else None
    return PosthocConfig(provider=prior.provider, params=dict(prior.params or {}),
                         types=types if types is not None else cfg.task.dictionary_types)


def _types(arm: PosthocConfig, gold: Sequence[Sequence[str]]) -> dict[str, str]:
    """The report's type map: the dictionary's (``sweep.dictionary.types``, the prior's silver map,
    else ``task.dictionary_types``, filled in by :func:`dictionary_of`), else the gold's entity types
    when they are the dictionary's groups; kept to the gold's types."""
    import priorkit

    from ..supervision.silver.checks import task_types
    from ..supervision.type_map import entity_types_of, resolve_types

    tags = [t for row in gold for t in row]
    types = resolve_types(arm.types, lambda: priorkit.get_provider(arm.provider, **arm.params).match_groups(),
                          entity_types_of(tags), field="task.dictionary_types (or sweep.dictionary.types)",
                          who="the report inside and outside the dictionary")
    return task_types(types, tags)


def dictionary_split_tags(arm: PosthocConfig, words: Sequence[Sequence[str]],
                          gold: Sequence[Sequence[str]]) -> list[list[str]]:
    """The dictionary's BIO tags of each sentence, typed as the report types them (``arm.types``,
    kept to the entity types of ``gold``)."""
    import priorkit

    from ..supervision.silver.label import group_entities

    provider = priorkit.get_provider(arm.provider, **arm.params)
    types = _types(arm, gold)
    return [group_entities(provider.matches(list(w)), len(w), types) for w in words]


def dictionary_rows(cfg: PipelineConfig, rows: Sequence[dict[str, Any]],
                    words: Sequence[Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """One row per run with saved predictions on ``sweep.split``, and the dictionary alone per
    fraction: precision, recall, F1, recall inside and outside the dictionary, and the precision
    of the predicted entities that are a dictionary entity and of the others (x100)."""
    arm = dictionary_of(cfg)
    split = cfg.sweep.split
    if arm is None:
        return []
    runs = [(r, read_predictions(Path(r["run_dir"]), split)) for r in rows if r.get("run_dir")]
    runs = [(r, p) for r, p in runs if p is not None]
    if not runs:
        return []
    gold = runs[0][1][1]
    if words is None:
        from ..training.data import load_data

        words = [e["words"] for e in load_data(cfg)[_split_key(split)].examples]
    if len(words) != len(gold):
        return []  # the data changed since these runs: nothing to say
    from ..metrics import ner_metrics

    dtags = dictionary_split_tags(arm, words, gold)
    doc_tags = _document_split_tags(cfg, arm, split, words, gold)
    out = []

    def row(name: str, fraction: float, seed: Any, tags: Sequence[Sequence[str]]) -> dict[str, Any]:
        m = ner_metrics([list(g) for g in gold], [list(t) for t in tags])
        rec = dictionary_recall(tags, gold, dtags)
        return {"prior": name, "fraction": fraction, "seed": seed, "precision": 100 * m["precision"],
                "recall": 100 * m["recall"], "f1": 100 * m["f1"], "recall_dict": rec.recall_dict,
                "recall_other": rec.recall_other, "recall_boundary": rec.recall_boundary,
                "recall_unseen": rec.recall_unseen, "precision_dict": rec.precision_dict,
                "precision_other": rec.precision_other, "coverage": rec.coverage,
                **({"recall_other_doc": dictionary_recall(tags, gold, doc_tags).recall_other} if doc_tags else {})}

    for r, (tags, g) in runs:
        if g == gold:
            out.append(row(r["prior"], float(r["fraction"]), int(r["seed"]), tags))
    for fraction in sorted({o["fraction"] for o in out}):
        out.append(row(DICTIONARY_ROW, fraction, "-", dtags))
    return out


def _document_split_tags(cfg: PipelineConfig, arm: PosthocConfig, split: str, words: Sequence[Sequence[str]],
                         gold: Sequence[Sequence[str]]) -> list[list[str]] | None:
    """The dictionary's tags of the split read as one document, when a post-hoc arm of the sweep
    adds the document pass (its window); None otherwise.  Against these the report also gives a
    stricter recall outside the dictionary: the pass's entities count as the dictionary's."""
    window = next((a.document for a in cfg.sweep.posthoc.values() if a.document is not None), None)
    if window is None:
        return None
    from ..errors import PriorkitError
    from .posthoc import split_document_tags

    typed = PosthocConfig(provider=arm.provider, params=arm.params, types=_types(arm, gold))
    try:
        return split_document_tags(cfg, typed, _split_key(split), words, window)
    except PriorkitError:
        return None  # the data changed since these runs: nothing to say


def _split_key(split: str) -> str:
    return "eval" if split == "eval" else "test"


def blind_spots(rows: Sequence[dict[str, Any]], baseline: str | None,
                margin: float = BLIND_MARGIN) -> list[str]:
    """One line per (arm, fraction) whose recall outside the dictionary is below the baseline's
    by more than ``margin`` points, paired by seed (the mean over the seeds both ran; the line
    gives its 95% CI, :func:`priorkit.stats.paired`, so that a drop on few seeds reads as such)."""
    if not baseline:
        return []
    rows_of: dict[tuple[str, float], dict[Any, dict[str, Any]]] = {}
    for r in rows:
        rows_of.setdefault((r["prior"], r["fraction"]), {})[r["seed"]] = r
    by = {k: {s: float(r["recall_other"]) for s, r in v.items()} for k, v in rows_of.items()}
    out = []
    for (name, fraction), per_seed in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        base = by.get((baseline, fraction), {})
        seeds = sorted(set(per_seed) & set(base), key=str)
        if name in (baseline, DICTIONARY_ROW) or not seeds:
            continue
        d = paired([per_seed[s] - base[s] for s in seeds])
        if d.mean < -margin:
            below = sum(per_seed[s] < base[s] for s in seeds)
            ci = f", 95% CI [{d.ci_low:+.1f}, {d.ci_high:+.1f}]" if d.n > 1 else ""
            out.append(f"blind outside the dictionary: {name} at fraction {fraction:g} finds "
                       f"{sum(per_seed[s] for s in seeds) / len(seeds):.1f}% of the entities the dictionary does "
                       f"not tag, {baseline} {sum(base[s] for s in seeds) / len(seeds):.1f}% ({d.mean:+.1f} points{ci}, "
                       f"{below}/{len(seeds)} seeds below): it relies on the dictionary's entities"
                       + _which_part(rows_of[(name, fraction)], rows_of[(baseline, fraction)], seeds)
                       + _precision_part(rows_of[(name, fraction)], rows_of[(baseline, fraction)], seeds, baseline)
                       + "; see docs/silver.md, when it pays and when it hurts")
    return out


def _which_part(arm: dict[Any, dict[str, Any]], base: dict[Any, dict[str, Any]], seeds: Sequence[Any]) -> str:
    """The blind line's clause on which part of "outside" is lost: the entities a match overlaps
    with other bounds (the model copies the dictionary's bounds) or those no match touches ("no
    match, no entity"); empty for rows written before the split."""
    keys = ("recall_boundary", "recall_unseen")
    if any(k not in r for k in keys for r in [*(arm[s] for s in seeds), *(base[s] for s in seeds)]):
        return ""
    mean = {(who, k): sum(float(rows[s][k]) for s in seeds) / len(seeds)
            for who, rows in (("arm", arm), ("base", base)) for k in keys}
    drop = {k: mean[("base", k)] - mean[("arm", k)] for k in keys}
    worst = max(keys, key=lambda k: drop[k])
    knob = ("the former: it copies the dictionary's bounds" if worst == "recall_boundary"
            else "the latter: it has learned 'no match, no entity'")
    return (f" (entities a match overlaps with other bounds: {mean[('arm', keys[0])]:.1f}% against "
            f"{mean[('base', keys[0])]:.1f}%; entities no match touches: {mean[('arm', keys[1])]:.1f}% against "
            f"{mean[('base', keys[1])]:.1f}%; the larger drop is {knob})")


def _precision_part(arm: dict[Any, dict[str, Any]], base: dict[Any, dict[str, Any]], seeds: Sequence[Any],
                    baseline: str) -> str:
    """The blind line's clause on what the baseline's finds outside the dictionary are worth: the
    precision of the entities each predicts that are not a dictionary entity.  Below the arm's
    F1 / 2, matching the baseline's recall there with finds as precise would cost the arm F1.
    Empty for rows written before the column."""
    if any("precision_other" not in r for r in [*(arm[s] for s in seeds), *(base[s] for s in seeds)]):
        return ""

    def mean(rows: dict[Any, dict[str, Any]], k: str) -> float:
        return sum(float(rows[s][k]) for s in seeds) / len(seeds)

    line = (f"; of the entities it predicts that are not a dictionary entity {mean(arm, 'precision_other'):.1f}% "
            f"are right, of {baseline}'s {mean(base, 'precision_other'):.1f}%")
    half = mean(arm, "f1") / 2
    if mean(base, "precision_other") < half:
        line += (f" (below half its F1, {half:.1f}: finds as precise as {baseline}'s would cost it F1, so "
                 "closing the gap takes more precise finds, not more of them)")
    return line


def markdown(rows: Sequence[dict[str, Any]], split: str, blind: Sequence[str] = ()) -> str:
    """The section of results.md: means over seeds per (arm, fraction), then the ``blind`` lines
    (:func:`blind_spots`)."""
    if not rows:
        return ""
    groups: dict[tuple[str, float], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["prior"], r["fraction"]), []).append(r)
    coverage = rows[-1]["coverage"]
    strict = any("recall_other_doc" in r for r in rows)
    lines = ["", f"## Inside and outside the dictionary ({split} split)", "",
             f"Recall on the gold entities the dictionary tags exactly ({coverage:.1f}% of them) and on the "
             "others; the others once more: those a match overlaps with other bounds or another type, and "
             "those no match touches. \"Precision outside\": of the entities an arm predicts that are not "
             "a dictionary entity, the share that is right; below F1 / 2 such finds cost F1. "
             + ("\"Outside the document-level dictionary\": recall on the entities the dictionary does not tag "
                "even when it reads the split as one text (a post-hoc arm's document pass): the entities "
                "that pass adds count as the dictionary's, not the model's. " if strict else "")
             + "Means over seeds, x100.", "",
             "| prior | fraction | runs | F1 | precision | recall | recall inside | recall outside "
             "| outside: other bounds | outside: no match | precision outside |"
             + (" outside the document-level dictionary |" if strict else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if strict else "")]
    for (name, fraction), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0] == DICTIONARY_ROW)):
        n = len(rs)

        def mean(k: str) -> str:
            if any(k not in x for x in rs):  # a CSV written before the column
                return "-"
            return f"{sum(float(x[k]) for x in rs) / n:.2f}"

        runs = "-" if name == DICTIONARY_ROW else str(n)
        lines.append(f"| {name} | {fraction:g} | {runs} | {mean('f1')} | {mean('precision')} | {mean('recall')} | "
                     f"{mean('recall_dict')} | {mean('recall_other')} | {mean('recall_boundary')} | "
                     f"{mean('recall_unseen')} | {'-' if name == DICTIONARY_ROW else mean('precision_other')} |"
                     + (f" {mean('recall_other_doc')} |" if strict else ""))
    if blind:
        lines += ["", *(f"- {line}" for line in blind)]
    return "\n".join(lines) + "\n"


def write(cfg: PipelineConfig, rows: Sequence[dict[str, Any]], folder: Path) -> tuple[str, Path | None, list[str]]:
    """(the Markdown section, the CSV file, the :func:`blind_spots` lines) of a sweep's runs;
    ("", None, []) when there is nothing."""
    table = dictionary_rows(cfg, rows)
    if not table:
        return "", None, []
    path = write_csv(table, folder / CSV_FILE)
    blind = blind_spots(table, cfg.sweep.baseline)
    return markdown(table, cfg.sweep.split, blind), path, blind


def write_csv(table: Sequence[dict[str, Any]], path: Path) -> Path:
    """The rows of :func:`dictionary_rows` as CSV (floats to 4 decimals)."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(table[0]))
        w.writeheader()
        for r in table:
            w.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
    return path
