"""The pipeline's side of silver labels (docs/silver.md): which text a run labels, the labels
from the store, and the training list or first stage of the run's recipe.

The labelling, the store and the recipes themselves live in :mod:`priorkit.supervision.silver`; this
module only connects them to a :class:`RunPlan` and its splits.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from ..supervision.silver.checks import entity_types, resolved_config, type_problem
from ..supervision.silver.config import CHUNK_SIZE, SilverConfig, silver_source, uses_dictionary
from . import ranks
from ..config import ConfigError, PipelineConfig, PriorConfig
from .data import Split
from .plan import RunPlan


@dataclasses.dataclass
class SilverRun:
    """A run's silver labels: its ``prior.silver`` section, the provider that labelled (the
    section's, or the prior's when it names none) and the silver rows."""

    config: SilverConfig
    provider: str | None
    rows: list[dict]

    def describe(self) -> dict[str, Any]:
        return {"sentences": len(self.rows), "recipe": self.config.recipe, "unmatched": self.config.unmatched,
                "provider": self.provider, "weight": self.config.weight,
                "teacher": dataclasses.asdict(self.config.teacher) if self.config.teacher else None}


def silver_dir(cfg: PipelineConfig) -> Path:
    """Where the labels of every labeller of the pipeline are stored (shared by its runs)."""
    return cfg.out_dir / "silver"


def _types_path(cfg: PipelineConfig, name: str) -> str:
    entry = (cfg.sweep.priors or {}).get(name)
    if isinstance(entry, dict) and "silver" in entry:
        return f"sweep.priors.{name}.silver.types"
    return "prior.silver.types"


def check_settings(cfg: PipelineConfig, settings: dict[str, PriorConfig | None], train: Split) -> None:
    """Before any run: every setting's type map names entity types the task has (its
    ``task.labels``, else the tags of data.train) -- a ConfigError at file:line if not."""
    from .tasks import make_task

    if not any(resolved_config(p) for p in settings.values()):
        return
    task = make_task(cfg.task)
    task.fit_labels(train.examples)
    for name, prior in settings.items():
        config = resolved_config(prior)
        if config is not None:
            _check_types(cfg, name, config.types, config.uses_dictionary, task.labels)


def _check_types(cfg: PipelineConfig, name: str, own: dict[str, str] | None, dictionary: bool,
                 labels: list[str]) -> None:
    why = type_problem(own, dictionary, labels, "task.labels" if cfg.task.labels else "the tags of data.train",
                       cfg.task.dictionary_types)
    if why:
        path = _types_path(cfg, name)
        raise ConfigError(f"{cfg.where(path)}: {path}: {why}")


def unlabeled_sentences(plan: RunPlan, splits: dict[str, Split]) -> list[list[str]]:
    """``data.unlabeled``'s sentences, or the rest of train: the sentences not in the run's
    training subset, labels hidden."""
    if "unlabeled" in splits:
        return [list(e["words"]) for e in splits["unlabeled"].examples]
    train = splits["train"]
    keep = set(plan.train_indices(len(train)).tolist())
    rest = [list(train.examples[i]["words"]) for i in range(len(train)) if i not in keep]
    if not rest:
        raise ConfigError(f"{plan.cfg.where('data')}: silver labels at fraction {plan.fraction:g} have no rest of "
                          "data.train to label; give data.unlabeled (a file or a split)")
    return rest


def silver_for_run(plan: RunPlan, splits: dict[str, Split], task: Any, log: Callable[[str], None] | None = None,
                   teacher: Path | None = None) -> SilverRun | None:
    """The run's silver rows (None without ``prior.silver``), labelled through the store: by
    the dictionary, or with ``silver.teacher`` by the trained ``teacher`` folder (the run's own,
    or ``teacher.model``) merged with the dictionary."""
    # the section's values are read here and handed down plain: supervision/ never sees the plan
    config = plan.prior.silver if plan.prior is not None else None
    if config is None:
        return None
    from ..providers.plugins import get_provider
    from ..supervision.silver.label import Labeller
    from ..supervision.silver.recipe import silver_rows
    from ..supervision.silver.store import SilverStore
    from ..supervision.type_map import resolve_types

    name, params = silver_source(config.provider, config.params, plan.prior.provider, plan.prior.params)
    dictionary = uses_dictionary(config.teacher is not None, config.teacher.dictionary if config.teacher else None)
    _check_types(plan.cfg, plan.prior_name, config.types, dictionary, task.labels)  # task: fitted on data.train
    sentences = unlabeled_sentences(plan, splits)
    labeller: Any = None  # teacher.dictionary false: the dictionary is never built, let alone asked
    if dictionary:
        provider = get_provider(name, **(params or {}))
        path = _types_path(plan.cfg, plan.prior_name)
        types = resolve_types(config.types if config.types is not None else plan.cfg.task.dictionary_types,
                              provider.match_groups, entity_types(task.labels),
                              field="prior.silver.types or task.dictionary_types", who=f"{plan.cfg.where(path)}: {path}")
        labeller = Labeller(provider, types)
    if config.teacher is not None:
        from ..inference import load_model
        from ..supervision.silver.teacher import TeacherLabeller

        folder = teacher if teacher is not None else Path(config.teacher.model).expanduser()
        t = config.teacher
        labeller = TeacherLabeller(load_model(folder), folder, t.threshold, labeller, t.merge)
        labeller.check_labels(task.labels, plan.cfg.where("prior.silver.teacher.model"))
    store = SilverStore(silver_dir(plan.cfg), labeller)
    if config.teacher is not None and plan.cfg.engine.type != "local":  # the teacher's labels on Dask workers
        from ..tagging.teacher import fill_store

        where = plan.cfg.engine.teacher_options()
        counts = ranks.on_main(fill_store, store, sentences, CHUNK_SIZE, where["engine"], where["workers"],
                               where["scheduler"],
                               dictionary=(name, params) if labeller.dictionary else None)
    else:
        counts = ranks.on_main(store.fill, sentences, CHUNK_SIZE)  # one writer; the others wait
    if log is not None and counts:
        on = f" on {counts['dask_workers']} Dask workers" if counts.get("dask_workers") else ""
        log(f"[{plan.label}] silver labels: {len(sentences)} sentences, {counts['labelled']} newly labelled{on} "
            f"({store.dir})")
    weight = 1.0 if config.weight == "auto" else float(config.weight)  # auto: resolved by calibrate_run
    low = None if config.unmatched_weight in (None, "auto") else float(config.unmatched_weight)
    rows = silver_rows(sentences, store.tags_for(sentences), task._index, config.unmatched, weight, low)
    return SilverRun(config, name, rows)


def one_pass(plan: RunPlan, **train: Any) -> RunPlan:
    """``plan`` with a training list the Trainer passes over once (the recipes build it)."""
    tc = dataclasses.replace(plan.cfg.train, epochs=1.0, **train)
    return dataclasses.replace(plan, cfg=dataclasses.replace(plan.cfg, train=tc))


def training_rows(plan: RunPlan, gold: list[dict], silver: SilverRun | None) -> tuple[RunPlan, list[dict]]:
    """(the plan the Trainer runs, its rows): ``mix`` -> one pass over gold and silver rows."""
    if silver is None or silver.config.recipe != "mix":
        return plan, gold
    from ..supervision.silver.recipe import mix_rows

    c = silver.config
    rows = mix_rows(gold, silver.rows, epochs=plan.cfg.train.epochs, silver_epochs=c.silver_epochs,
                    ratio=None, seed=plan.seed)
    return one_pass(plan), rows


def silver_first(plan: RunPlan, silver: SilverRun, model: Any, tokenizer: Any, collator: Any, device: str,
                 channels: Any = ()) -> dict:
    """``then-gold``'s first stage: ``silver_epochs`` passes over the silver rows, in place on
    ``model`` (the gold stage then trains from these weights)."""
    import numpy as np

    from ..supervision.silver.recipe import repeat
    from .trainer import make_trainer

    rows = repeat(silver.rows, silver.config.silver_epochs, np.random.default_rng([plan.seed, 23]))
    stage = one_pass(plan, save="no", max_steps=-1)
    trainer = make_trainer(stage, model, tokenizer, collator, device, rows, channels=channels)
    result = trainer.train()
    return {"rows": len(rows), "steps": int(trainer.state.global_step), "loss": float(result.training_loss)}
