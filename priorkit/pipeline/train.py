"""Fine-tuning and scoring one run with the Hugging Face ``Trainer`` and ``PriorCollator``.

A *run* is one (prior setting, training fraction, seed) of a pipeline.  Its
folder holds::

    run.json            what the run is (train key, prior, fraction, seed)
    config.yaml         the resolved pipeline config and prior setting
    checkpoints/        Trainer checkpoints (resume); removed when done unless kept
    model/              the final model + tokenizer + priorkit-run.json, priorkit.json and
                        README.md (model card): ``priorkit.load_model`` / ``priorkit predict``
    train_log.json      the Trainer's log history (loss, learning rate, ...)
    metrics.json        scores per evaluated split, with the keys they are valid for

The model in ``model/`` carries its prior-attention settings in config.json
(``config.priorkit``), and ``priorkit-run.json`` names the prior builder, so
:func:`load_trained` gives back a model that behaves exactly as in training.

The module is over 500 lines because training, saving, reloading and scoring
one run share the run folder's layout, :class:`RunPlan` and the prior wiring
(builder, collator, attention); split apart, each half would import the other.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..errors import PriorkitError
from . import ranks
from .config import PipelineConfig, PriorConfig, config_from_dict, digest, for_fraction, prior_settings
from .data import Split, fraction_indices
from .tasks import Task, make_task

log = logging.getLogger(__name__)

RUN_FILE = "run.json"
MODEL_DIR = "model"
MODEL_META = "priorkit-run.json"
METRICS_FILE = "metrics.json"
NO_PRIOR = "none"

#: train-section fields that do not change what a run learns (not in its key)
_NON_SEMANTIC = ("save", "save_steps", "keep_checkpoints", "keep_model", "logging_steps", "threads",
                 "device", "dataloader_workers", "progress", "eval_batch_size")


# ---------------------------------------------------------------------------
# identity of a run
# ---------------------------------------------------------------------------
@dataclasses.dataclass
class RunPlan:
    """One cell of a sweep: which prior setting, which fraction, which seed."""

    cfg: PipelineConfig
    prior_name: str
    prior: PriorConfig | None
    fraction: float
    seed: int

    @property
    def run_dir(self) -> Path:
        return self.cfg.out_dir / self.prior_name / f"frac{self.fraction:g}" / f"seed{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.prior_name} fraction={self.fraction:g} seed={self.seed}"

    def train_indices(self, n: int) -> np.ndarray:
        tc = self.cfg.train
        return fraction_indices(n, self.fraction, mode=tc.subset, seed=self.seed, subset_seed=tc.subset_seed)

    def train_key(self, train: Split) -> str:
        """Everything that changes the trained weights, hashed."""
        idx = self.train_indices(len(train))
        train_cfg = {k: v for k, v in dataclasses.asdict(self.cfg.train).items() if k not in _NON_SEMANTIC}
        train_cfg.update(fraction=self.fraction, seed=self.seed)
        if ranks.world_size() > 1:  # the effective batch grows with it (absent for one process: old keys hold)
            train_cfg["world_size"] = ranks.world_size()
        return digest({
            "model": dataclasses.asdict(self.cfg.model),
            "task": dataclasses.asdict(self.cfg.task),
            "prior": prior_identity(self.prior),
            "train": train_cfg,
            "data": [train.digest, digest(idx.tolist())],
        })

    def eval_key(self, train_key: str, splits: dict[str, Split]) -> str:
        return digest({"train": train_key, "splits": {s: splits[s].digest for s in self.cfg.evaluate}})


def prior_identity(prior: PriorConfig | None) -> Any:
    """The parts of a prior setting that change values (not its label or cache file)."""
    if prior is None:
        return None
    d = dataclasses.asdict(prior)
    d.pop("name", None)
    d.pop("cache", None)
    if not d.get("train"):  # absent before per-prior train fields existed: old keys hold
        d.pop("train", None)
    # the defaults of fields added later are left out, so older runs' keys hold
    for field, default in (("within", "all"), ("stop_words", None), ("stop_value", 0.0)):
        if d.get(field) == default:
            d.pop(field, None)
    return d


def plan_for_run(cfg: PipelineConfig, prior_name: str | None = None) -> RunPlan:
    """The single run ``priorkit run`` does: ``train.fraction``, ``train.seed`` and a prior."""
    if prior_name is None:
        prior = cfg.prior
        name = (prior.name or "prior") if prior is not None else NO_PRIOR
    else:
        settings = prior_settings(cfg)
        if prior_name not in settings:
            raise PriorkitError(
                f"{cfg.source}: no prior setting {prior_name!r}; sweep.priors has {', '.join(settings)}"
            )
        prior, name = settings[prior_name], prior_name
    return RunPlan(for_fraction(cfg, cfg.train.fraction, prior), name, prior, cfg.train.fraction, cfg.train.seed)


# ---------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------
def configure_torch(cfg: PipelineConfig) -> str:
    """Threads and device; returns the device name the Trainer will use.

    Processes started together on one machine (torchrun) share its cores, so
    each takes its share rather than all of them; they join their process
    group here (:func:`ranks.init`), before any step needs a barrier.
    """
    tc = cfg.train
    threads = tc.threads or max(1, _usable_cores() // ranks.local_world_size())
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    device = _pick_device(cfg)
    ranks.init(device)
    return device


def _pick_device(cfg: PipelineConfig) -> str:
    tc = cfg.train
    if tc.device != "auto":
        if tc.device == "cuda" and not torch.cuda.is_available():
            raise PriorkitError(f"{cfg.where('train.device')}: train.device is cuda but no CUDA device is visible")
        return tc.device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1  # what this process may use (containers, taskset)
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def model_source(cfg: PipelineConfig) -> str:
    if cfg.model.name_or_path:
        return cfg.model.name_or_path
    from ..resources import minilm_path

    return str(minilm_path())


def cache_path(cfg: PipelineConfig, prior: PriorConfig | None) -> Path | None:
    if prior is None or prior.cache is None:
        return None
    if prior.cache == "auto":
        return cfg.out_dir / "cache" / "priors.duckdb"
    return Path(prior.cache).expanduser()


def make_provider(prior: PriorConfig):
    return prior.spec().build_provider()


def make_builder(cfg: PipelineConfig, prior: PriorConfig | None, tokenizer: Any, *, use_cache: bool = True):
    """The :class:`PriorBuilder` of a prior setting (None for no prior)."""
    if prior is None:
        return None
    path = cache_path(cfg, prior) if use_cache else None
    cache = str(path) if path is not None and path.exists() else None
    from ..align import PriorBuilder

    return PriorBuilder.from_spec(prior.spec(), tokenizer, cache=cache, truncation=True,
                                  max_length=cfg.model.max_length)


def enable_prior(model: Any, prior: PriorConfig | None) -> Any:
    if prior is None:
        return model
    from ..attention import enable_prior_attention

    a = prior.attention
    return enable_prior_attention(model, layers=a.layers, mode=a.mode, heads=a.heads, **a.options)


def make_collator(cfg: PipelineConfig, tokenizer: Any, builder: Any):
    from ..collator import PriorCollator

    # store=True: every epoch after the first assembles the priors from memory (same tensors,
    # no tokenising or aligning again; see priorkit/aligned_store.py)
    return PriorCollator(tokenizer if builder is None else builder.tokenizer, builder,
                         store=builder is not None, truncation=True, max_length=cfg.model.max_length)


#: env var naming a folder: each process appends the index of every training example it loads
#: to ``examples-rank<R>.txt`` there -- to check what each process of a multi-process run saw
TRACE_ENV = "PRIORKIT_TRACE_EXAMPLES"


class ListDataset(torch.utils.data.Dataset):
    """A list of example dicts as a map-style dataset (the Trainer needs ``len``).

    ``trace``: a file to which every loaded index is appended (see :data:`TRACE_ENV`).
    """

    def __init__(self, rows: Sequence[dict], trace: str | os.PathLike | None = None) -> None:
        self.rows = list(rows)
        self.trace = trace

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        if self.trace is not None:
            with open(self.trace, "a") as fh:  # per item: DataLoader workers may load it too
                fh.write(f"{i}\n")
        return self.rows[i]


def _trace_file() -> Path | None:
    folder = os.environ.get(TRACE_ENV)
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) / f"examples-rank{ranks.rank()}.txt"


class SeededLengthGroupedSampler:
    """Length-grouped order drawn from ``seed + epoch``, identical in every process.

    With several processes accelerate hands every process its own batches of
    one shared order, so all processes must draw the same order.  The stock
    ``LengthGroupedSampler`` draws from the global RNG, which drifts apart
    between processes once their batches (of different lengths) have drawn
    dropout masks; this one does not, and a resumed run redraws the same order.
    """

    def __init__(self, batch_size: int, lengths: Sequence[int], seed: int) -> None:
        self.batch_size, self.lengths, self.seed, self.epoch = batch_size, list(lengths), seed, 0

    def set_epoch(self, epoch: int) -> None:  # called by the Trainer through accelerate
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        from transformers.trainer_pt_utils import get_length_grouped_indices

        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        return iter(get_length_grouped_indices(self.lengths, self.batch_size, generator=g))


def _token_lengths(tokenizer: Any, rows: Sequence[dict], max_length: int) -> list[int]:
    if "words" in rows[0]:
        enc = tokenizer([r["words"] for r in rows], is_split_into_words=True, truncation=True,
                        max_length=max_length)
    else:
        b = [r["text_b"] for r in rows] if rows[0].get("text_b") is not None else None
        enc = tokenizer([r["text_a"] for r in rows], b, truncation=True, max_length=max_length)
    return [len(ids) for ids in enc["input_ids"]]


def make_trainer(plan: RunPlan, model: Any, tokenizer: Any, collator: Any, device: str,
                 train_rows: Sequence[dict] | None = None, eval_rows: Sequence[dict] | None = None,
                 compute_metrics: Any = None):
    """A ``Trainer`` configured from the pipeline's ``train`` section.

    ``eval_rows`` (with ``compute_metrics``): scored after every epoch, the scores going to
    the callbacks' ``on_evaluate`` (``priorkit tune`` prunes on them).
    """
    from transformers import Trainer, TrainingArguments
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from ..attention import supervision_loss

    tc = plan.cfg.train
    warmup: float = tc.warmup if tc.warmup < 1 else int(tc.warmup)
    args = TrainingArguments(
        output_dir=str(plan.run_dir / "checkpoints"),
        num_train_epochs=tc.epochs,
        max_steps=tc.max_steps,
        learning_rate=tc.learning_rate,
        per_device_train_batch_size=tc.batch_size,
        per_device_eval_batch_size=tc.eval_batch_size,
        gradient_accumulation_steps=tc.gradient_accumulation,
        warmup_steps=warmup,
        weight_decay=tc.weight_decay,
        max_grad_norm=tc.max_grad_norm,
        seed=plan.seed,
        data_seed=plan.seed,
        save_strategy=tc.save,
        save_steps=tc.save_steps,
        save_total_limit=1,  # the newest checkpoint is all a resume needs
        logging_strategy="steps",
        logging_steps=tc.logging_steps,
        eval_strategy="epoch" if eval_rows else "no",
        report_to="none",
        remove_unused_columns=False,  # the raw text must reach PriorCollator
        disable_tqdm=not tc.progress,
        use_cpu=device == "cpu",
        dataloader_num_workers=tc.dataloader_workers,
        fp16=tc.precision == "fp16" and device == "cuda",
        bf16=tc.precision == "bf16" and device == "cuda",
    )
    lengths = (_token_lengths(collator.tokenizer, train_rows, plan.cfg.model.max_length)
               if tc.group_by_length and train_rows else None)
    gate_lr = plan.prior.attention.learning_rate if plan.prior is not None else None

    class PriorTrainer(Trainer):
        """Length-grouped batches from token counts (the rows hold raw text, not ids); the
        ``supervise`` mode's auxiliary loss added to the task loss."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss, outputs = super().compute_loss(model, inputs, return_outputs=True,
                                                 num_items_in_batch=num_items_in_batch)
            extra = supervision_loss(model)
            if extra is not None:
                loss = loss + extra.to(loss.dtype)
            return (loss, outputs) if return_outputs else loss

        def create_optimizer(self, model=None):
            optimizer = super().create_optimizer(model)
            if gate_lr is not None:
                gate_param_group(optimizer, model if model is not None else self.model, gate_lr)
            return optimizer

        def _get_train_sampler(self, train_dataset=None):
            # Several processes: accelerate shards the batches of this sampler (BatchSamplerShard),
            # so it must give every process the same order; one process keeps the stock sampler.
            if lengths is None:
                return super()._get_train_sampler(train_dataset)  # random: accelerate seeds it per epoch
            size = self.args.train_batch_size * self.args.gradient_accumulation_steps
            if self.args.world_size > 1:
                return SeededLengthGroupedSampler(size, lengths, seed=self.args.data_seed)
            return LengthGroupedSampler(size, lengths=lengths)

    dataset = ListDataset(train_rows, trace=_trace_file()) if train_rows else None
    return PriorTrainer(model=model, args=args, train_dataset=dataset, data_collator=collator,
                        processing_class=tokenizer, eval_dataset=ListDataset(eval_rows) if eval_rows else None,
                        compute_metrics=compute_metrics)


def gate_param_group(optimizer: torch.optim.Optimizer, model: Any, lr: float) -> int:
    """Move the learnable prior parameters (gates, strengths) into their own parameter
    group (learning rate ``lr``, no weight decay, which would pull them towards 0).  Call
    before the first step and before the scheduler is made: the scheduler scales every
    group's rate by the same factor.  Returns how many tensors moved."""
    from ..attention import prior_parameters

    gates = {id(p) for _, p in prior_parameters(model) if p.requires_grad}
    if not gates:
        raise PriorkitError("attention.learning_rate is set but the model has no learnable prior "
                            "parameters: enable the prior with mode: gate or learned_bias")
    moved = []
    for group in optimizer.param_groups:
        moved += [p for p in group["params"] if id(p) in gates]
        group["params"] = [p for p in group["params"] if id(p) not in gates]
    optimizer.add_param_group({"params": moved, "lr": lr, "weight_decay": 0.0})
    return len(moved)


# ---------------------------------------------------------------------------
# train / evaluate / reload
# ---------------------------------------------------------------------------
def fit_task(cfg: PipelineConfig, train: Split) -> Task:
    task = make_task(cfg.task)
    task.fit_labels(train.examples)
    return task


def _whole_checkpoint(path: Path) -> bool:
    """A checkpoint a kill did not cut short: its trainer state reads as JSON."""
    import json

    try:
        json.loads((path / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return True


def last_checkpoint(run_dir: Path) -> Path | None:
    """The newest whole checkpoint (one cut short by a kill while it was written is passed over)."""
    ckpts = [p for p in (run_dir / "checkpoints").glob("checkpoint-*") if p.is_dir()]
    ckpts = [p for p in ckpts if _whole_checkpoint(p)]
    if not ckpts:
        return None
    return max(ckpts, key=lambda p: int(p.name.split("-")[-1]))


def train_run(plan: RunPlan, splits: dict[str, Split], *, resume: bool = True,
              callbacks: Sequence[Any] = (), eval_each_epoch: str | None = None) -> dict[str, Any]:
    """Fine-tune one run and save ``model/``; returns a training summary.

    Resumes from the newest checkpoint in ``checkpoints/`` when there is one
    (the caller checked it belongs to this run's train key).  ``callbacks`` are
    extra ``transformers.TrainerCallback`` objects (early stopping, logging).
    ``eval_each_epoch``: a split of ``splits`` scored after every epoch; the scores
    reach the callbacks' ``on_evaluate`` as ``eval_<metric>``.
    """
    from transformers import AutoTokenizer, set_seed

    cfg = plan.cfg
    device = configure_torch(cfg)
    train = splits["train"]
    task = fit_task(cfg, train)
    rows = [task.encode(train.examples[i]) for i in plan.train_indices(len(train))]
    key = plan.train_key(train)
    source = model_source(cfg)

    set_seed(plan.seed)  # the new head's initial weights depend on it: same for every prior setting
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = task.load_model(source)
    enable_prior(model, plan.prior)
    builder = make_builder(cfg, plan.prior, tokenizer)
    collator = make_collator(cfg, tokenizer, builder)
    eval_rows = compute_metrics = None
    if eval_each_epoch is not None:
        scored = splits[eval_each_epoch].examples
        eval_rows = [task.encode(e) for e in scored]

        def compute_metrics(pred: Any) -> dict[str, float]:
            return task.score(pred.predictions, pred.label_ids, scored)

    trainer = make_trainer(plan, model, tokenizer, collator, device, rows, eval_rows, compute_metrics)
    for callback in callbacks:
        trainer.add_callback(callback)

    checkpoint = last_checkpoint(plan.run_dir) if resume else None
    t0 = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    seconds = time.perf_counter() - t0
    summary = {
        "train_key": key,
        "examples": len(rows),
        "steps": int(trainer.state.global_step),
        "epochs": float(trainer.state.epoch or 0),
        "train_loss": float(result.training_loss),
        "seconds": round(seconds, 2),
        "resumed_from": checkpoint.name if checkpoint else None,
        "device": device,
        "threads": torch.get_num_threads(),
        "world_size": int(trainer.args.world_size),
    }
    _save_model(plan, trainer, tokenizer, task, summary, inputs=_input_kind(train, task))

    history = trainer.state.log_history

    def write_log() -> None:
        (plan.run_dir / "train_log.json").write_text(json.dumps(history, indent=1))
        if not cfg.train.keep_checkpoints:
            shutil.rmtree(plan.run_dir / "checkpoints", ignore_errors=True)

    ranks.on_main(write_log)
    del trainer, model
    _release_memory()
    return summary


def _release_memory() -> None:
    """Give cached GPU memory back between runs of a sweep (no full gc: it costs seconds
    with WordNet's object graph in memory, and tensors are freed by reference counting)."""
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _input_kind(train: Split, task: Task) -> str:
    from ..inference.folder import input_kind

    return input_kind(train.examples[0] if train.examples else None, task.type)


def _save_model(plan: RunPlan, trainer: Any, tokenizer: Any, task: Task, summary: dict,
                inputs: str = "pairs") -> None:
    """Write ``model/`` atomically: a half-written model never looks finished.

    Every process calls it: ``trainer.save_model`` writes on the main process
    only (under FSDP/DeepSpeed all processes must take part in gathering the
    weights); the rest is the main process's, and the others wait for it.
    """
    final = plan.run_dir / MODEL_DIR
    tmp = plan.run_dir / (MODEL_DIR + ".partial")
    ranks.on_main(shutil.rmtree, tmp, ignore_errors=True)
    trainer.save_model(str(tmp))

    def finish() -> None:
        tokenizer.save_pretrained(str(tmp))
        meta = run_metadata(plan, task)
        meta["train"] = summary
        (tmp / MODEL_META).write_text(json.dumps(meta, indent=2))
        (tmp / "priorkit-pipeline.yaml").write_text(plan.cfg.to_yaml())
        from ..inference.folder import write_model_files

        write_model_files(tmp, meta, inputs)  # priorkit.json (the prior, for load_model) and README.md
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)

    ranks.on_main(finish)


def run_metadata(plan: RunPlan, task: Task) -> dict[str, Any]:
    path = cache_path(plan.cfg, plan.prior)
    return {
        "format": 1,
        "pipeline": plan.cfg.name,
        "prior_name": plan.prior_name,
        "prior": dataclasses.asdict(plan.prior) if plan.prior is not None else None,
        "cache": str(path.resolve()) if path is not None else None,
        "fraction": plan.fraction,
        "seed": plan.seed,
        "task": dataclasses.asdict(plan.cfg.task),
        "labels": task.labels,
        "model_source": plan.cfg.model.name_or_path,
        "max_length": plan.cfg.model.max_length,
        "config": plan.cfg.to_dict(),
    }


@dataclasses.dataclass
class TrainedModel:
    """A fine-tuned run loaded back: the model (prior attention restored), its tokenizer and builder."""

    model: Any
    tokenizer: Any
    builder: Any
    task: Task
    cfg: PipelineConfig
    prior: PriorConfig | None
    meta: dict[str, Any]

    def collator(self):
        return make_collator(self.cfg, self.tokenizer, self.builder)

    @torch.no_grad()
    def predict(self, examples: Sequence[dict], batch_size: int = 64) -> np.ndarray:
        """Raw model outputs (logits) for example dicts, in order; (N, ...) padded like the Trainer."""
        collate = self.collator()
        self.model.eval()
        device = next(self.model.parameters()).device
        outs = []
        for start in range(0, len(examples), batch_size):
            batch = collate([self.task.encode(e) for e in examples[start:start + batch_size]])
            batch.pop("labels", None)
            batch = {k: v.to(device) for k, v in batch.items()}
            outs.append(self.model(**batch).logits.float().cpu().numpy())
        if outs[0].ndim == 3:  # token classification: pad to the longest batch
            width = max(o.shape[1] for o in outs)
            outs = [np.pad(o, ((0, 0), (0, width - o.shape[1]), (0, 0)), constant_values=-100) for o in outs]
        return np.concatenate(outs)


def load_trained(model_dir: str | Path, *, use_cache: bool = True) -> TrainedModel:
    """Reload a run's ``model/`` folder (or the run folder) with its prior settings.

    The attention settings come back from ``config.priorkit`` (and trained gates
    from the weights); the prior builder is rebuilt from ``priorkit-run.json``.
    """
    from transformers import AutoTokenizer

    from ..align import load_tokenizer

    model_dir = Path(model_dir)
    if (model_dir / MODEL_DIR / MODEL_META).exists():
        model_dir = model_dir / MODEL_DIR
    meta_file = model_dir / MODEL_META
    if not meta_file.exists():
        raise PriorkitError(f"{model_dir} holds no {MODEL_META}; is it a priorkit run's model folder?")
    meta = json.loads(meta_file.read_text())
    cfg = config_from_dict(meta["config"], source=str(meta_file))
    # the run's own prior in place of the file's; sweep.priors are merged over the file's
    # prior and would be checked against the wrong base, so they are left out (the rest
    # of the sweep section stays: sweep.split is checked against `evaluate`)
    own = {**meta["config"], "prior": meta["prior"],
           "sweep": {k: v for k, v in (meta["config"].get("sweep") or {}).items() if k != "priors"}}
    prior = config_from_dict(own, source=str(meta_file)).prior if meta["prior"] is not None else None
    if prior is not None and meta.get("cache") and prior.cache is not None:
        prior.cache = meta["cache"]  # absolute: the run may be loaded from another directory
    task = make_task(cfg.task)
    task.labels = meta.get("labels")
    if task.labels is not None:
        task._index = {n: i for i, n in enumerate(task.labels)}
    tokenizer = load_tokenizer(AutoTokenizer.from_pretrained(str(model_dir)))
    model = task.load_model(str(model_dir))
    if getattr(model.config, "priorkit", None):
        from ..attention import enable_prior_attention

        enable_prior_attention(model)  # no arguments: the saved settings (and gates) come back
    builder = make_builder(cfg, prior, tokenizer, use_cache=use_cache)
    return TrainedModel(model, tokenizer, builder, task, cfg, prior, meta)


def evaluate_run(plan: RunPlan, splits: dict[str, Split], *, trained: TrainedModel | None = None
                 ) -> dict[str, dict[str, float]]:
    """Score the run's saved model on every split in ``evaluate``."""
    device = configure_torch(plan.cfg)
    trained = trained or load_trained(plan.run_dir / MODEL_DIR)
    collator = trained.collator()
    trainer = make_trainer(plan, trained.model, trained.tokenizer, collator, device)
    out: dict[str, dict[str, float]] = {}
    for name in plan.cfg.evaluate:
        split = splits[name]
        rows = [trained.task.encode(e) for e in split.examples]
        t0 = time.perf_counter()
        pred = trainer.predict(ListDataset(rows))
        metrics = trained.task.score(pred.predictions, pred.label_ids, split.examples)
        metrics["examples"] = float(len(rows))
        metrics["seconds"] = round(time.perf_counter() - t0, 2)
        out[name] = metrics
    del trainer
    _release_memory()
    ckpt_dir = plan.run_dir / "checkpoints"  # the eval-only Trainer creates its output_dir

    def tidy() -> None:
        if ckpt_dir.is_dir() and not any(ckpt_dir.iterdir()):
            ckpt_dir.rmdir()

    ranks.on_main(tidy)
    return out
