"""The pipeline's side of calibration (docs/calibration.md): before a run trains, its
dictionary is counted against the run's own gold subset, the forms below the threshold are
dropped from the matches of its token features and silver labels (the ``calibrated``
provider), ``silver.weight: auto`` becomes the dictionary's estimated F1, and the run prints
(and writes to ``calibration.json``) the dictionary's quality."""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable

from ..supervision.calibration import Calibration, calibrate
from ..jsonfile import write_json
from ..config import ConfigError
from .data import Split
from .plan import RunPlan

log = logging.getLogger(__name__)

CALIBRATION_FILE = "calibration.json"
#: silver labels whose estimated F1 on the gold subset is below this get a warning: on BC5CDR
#: Disease with HPO alone (F1 about 0.5) they cost 14 F1 against no knowledge (docs/silver.md)
WEAK_SILVER_F1 = 0.6


def _print(line: str) -> None:
    print(line, flush=True)


def _types(plan: RunPlan, task_labels: list[str], provider: Any) -> dict[str, str]:
    """The map the calibration counts with: ``calibrate.types``, else ``silver.types``, else the
    pipeline's ``task.dictionary_types``, else the task's entity types when they are groups of the
    dictionary (kept to the task's types); raises naming the fields otherwise."""
    from ..supervision.silver.checks import entity_types, task_types
    from ..supervision.type_map import resolve_types

    prior = plan.prior
    c = prior.calibrate
    if c is not None and c.types is not None:
        return dict(c.types)
    own = prior.silver.types if prior.silver is not None and prior.silver.types else None
    where = plan.cfg.where("prior.calibrate" if c is not None else "prior.silver")
    base = resolve_types(own if own is not None else plan.cfg.task.dictionary_types, provider.match_groups,
                         entity_types(task_labels), who=f"{where}: the calibration of {plan.prior_name!r}",
                         field="task.dictionary_types (or prior.calibrate.types / prior.silver.types)")
    return task_types(base, task_labels)


def _is_dictionary(section: Any, prior: Any) -> bool:
    """Whether a features/silver section reads the prior's own provider (not a control)."""
    return section is not None and section.provider in (None, prior.provider) and (
        section.params is None or section.params == prior.params)


def reads_dictionary(prior: Any) -> bool:
    """Whether a setting has token features or silver labels that a dictionary labels (false for
    self-training without knowledge: no features, ``teacher.dictionary`` false)."""
    silver = prior.silver
    from ..supervision.silver.config import uses_dictionary

    return prior.features is not None or (silver is not None and uses_dictionary(
        silver.teacher is not None, silver.teacher.dictionary if silver.teacher else None))


def calibration_of(plan: RunPlan, splits: dict[str, Split], task_labels: list[str]
                   ) -> tuple[Calibration, float | None, list, list, dict[str, str]]:
    """The calibration a run of ``plan`` makes on its own gold subset, as :func:`calibrate_run`
    makes it: (the counts, the threshold or None, the forms dropped, the forms kept inside a
    dropped branch, the group -> type map it counted with).  Also read by the sweep's calibrated
    dictionary-alone baseline (``priorkit.evaluation.baselines``), so that it is calibrated exactly
    as the setting it stands beside."""
    prior = plan.prior
    where = plan.cfg.where("prior.calibrate" if prior.calibrate is not None else "prior.silver.weight")
    train = splits["train"]
    gold = [train.examples[i] for i in plan.train_indices(len(train))]
    if not gold:
        raise ConfigError(f"{where}: calibration needs the run's gold subset, and fraction {plan.fraction:g} "
                          "leaves none; train on a fraction > 0 or set prior.calibrate: null")
    from ..providers.plugins import get_provider

    provider = get_provider(prior.provider, **(prior.params or {}))
    if not provider.supports_matches:
        raise ConfigError(f"{where}: provider {prior.provider!r} has no concept matches to calibrate")
    types = _types(plan, task_labels, provider)
    if not types:
        raise ConfigError(f"{where}: no group of the type map names an entity type of the task "
                          f"({', '.join(task_labels)}); set prior.calibrate.types")
    c = prior.calibrate
    cal: Calibration = calibrate(provider, gold, types, c.prior_strength if c else 2.0,
                                 branches=bool(c and c.branches))
    threshold = c.threshold if c is not None and c.threshold > 0 else None
    drop = cal.dropped(threshold) if threshold is not None else []
    keep = cal.kept(threshold) if threshold is not None else []
    return cal, threshold, drop, keep, types


def calibrate_run(plan: RunPlan, splits: dict[str, Split], task_labels: list[str],
                  say: Callable[[str], None] | None = None) -> tuple[RunPlan, dict[str, Any] | None]:
    """(the plan with its matches calibrated, the calibration's record); the plan unchanged and
    None without ``prior.calibrate`` and without ``silver.weight: auto``."""
    prior = plan.prior
    silver = prior.silver if prior is not None else None
    auto = silver is not None and silver.teacher is None and (
        silver.weight == "auto" or (silver.unmatched_weight == "auto" and silver.unmatched == "O"))
    if prior is None or (prior.calibrate is None and not auto):
        return plan, None
    if not auto and not reads_dictionary(prior):  # no features, and silver labels without a dictionary
        return plan, None                        # (teacher.dictionary false): the dictionary is not asked
    cal, threshold, drop, keep, _ = calibration_of(plan, splits, task_labels)
    record = cal.to_dict(threshold)
    changes: dict[str, Any] = {}
    if drop:
        wrapped = {"provider": prior.provider, "params": dict(prior.params or {}), "drop": [list(d) for d in drop]}
        if keep:
            wrapped["keep"] = [list(k) for k in keep]
        for name in ("features", "silver"):
            section = getattr(prior, name)
            if _is_dictionary(section, prior):
                changes[name] = dataclasses.replace(section, provider="calibrated", params=wrapped)
    if auto:  # weights that follow the estimate, as a label model weighs its sources
        silver = changes.get("silver", prior.silver)
        if silver.weight == "auto":
            silver = dataclasses.replace(silver, weight=max(cal.silver_weight(threshold), 0.05))
            record["silver_weight"] = silver.weight
        if silver.unmatched_weight == "auto" and silver.unmatched == "O":
            silver = dataclasses.replace(silver, unmatched_weight=round(max(cal.quality(threshold).recall, 0.05), 4))
            record["silver_unmatched_weight"] = silver.unmatched_weight
        changes["silver"] = silver
    lines = [f"[{plan.label}] {line}" for line in cal.report(threshold)]
    quality = cal.quality(threshold)
    if prior.silver is not None and prior.silver.teacher is None and quality.f1 < WEAK_SILVER_F1:
        warning = (f"[{plan.label}] WARNING: the silver labels' dictionary scores F1 {100 * quality.f1:.1f} "
                   f"(P {100 * quality.precision:.1f}, R {100 * quality.recall:.1f}) on the run's gold subset; "
                   f"labels this weak cost up to 14 F1 against no knowledge (docs/silver.md). "
                   + ("Their weights follow the estimate (auto)." if auto else
                      "Consider silver.weight: auto, a teacher (silver.teacher), or no silver labels."))
        lines.append(warning)
        record["warning"] = warning
    for line in lines:
        (say or _print)(line)
    write_json(plan.run_dir / CALIBRATION_FILE, record)
    if changes:
        plan = dataclasses.replace(plan, prior=dataclasses.replace(prior, **changes))
    return plan, record
