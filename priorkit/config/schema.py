"""The pipeline file's schema: one dataclass per section.

A pipeline file describes one job (model, task, data, prior, precompute,
training, sweep grid, tune study).  The schema *is* the dataclasses below: a
field's type hint and default are what the loader (:mod:`.loader`) checks and
fills in, so docs/pipelines.md, the validator and the code that reads the
config cannot drift apart.  Rules across fields, and what follows from them (the sweep's
prior settings, a fraction's train fields), are in :mod:`.checks`.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from ..supervision.calibration import CalibrateConfig
from ..channels.attention.config import AttentionConfig
from ..channels.features.config import FeatureConfig
from ..supervision.silver.config import SilverConfig
from ..providers.spec import PriorSpec
from .loader import _convert, _where


@dataclasses.dataclass
class ModelConfig:
    #: Hub id or local folder; null = the embedded MiniLM (priorkit.resources.minilm_path()).
    name_or_path: str | None = None
    #: every input (and its prior) is truncated to this many tokens.
    max_length: int = 128


@dataclasses.dataclass
class TaskConfig:
    type: Literal["regression", "pair-classification", "token-classification"] = "regression"
    #: main metric for sweeps and reports; null = the task's default
    #: (spearman / accuracy / f1).
    metric: str | None = None
    #: regression: the model is trained on label / label_scale (STS-B 0-5 -> 0-1);
    #: predictions are multiplied back before metrics.
    label_scale: float = 1.0
    #: classification / NER label names in id order; null = sorted labels of the training data.
    labels: list[str] | None = None
    #: token classification: how a word's tag is chosen from its scores. "argmax": each word's
    #: most likely tag; "viterbi": the most likely sequence of valid BIO (BIOES) tags
    #: (docs/inference.md#decoding). Changes the scores, not the training.
    decode: Literal["argmax", "viterbi"] = "argmax"
    #: token classification: added to each word's log-probability of O before decoding
    #: (above 0: fewer, surer entities; below 0: more). Chosen on a validation split.
    o_bias: float = 0.0
    #: token classification: match group -> entity type, in priority order: how a dictionary's
    #: matches become this task's entities (silver labels, calibration, post-hoc arms, the
    #: dictionary report), e.g. BC5CDR with the hpo+mesh ontology: {mesh:D: Chemical, mesh:C:
    #: Disease, hpo: Disease}. A section's own ``types`` replaces it. null: the data's entity types,
    #: when they are groups of the dictionary; otherwise a step that needs the map stops.
    dictionary_types: dict[str, str] | None = None


@dataclasses.dataclass
class DataSource:
    """One split: a built-in corpus, a Hugging Face ``datasets`` id, or a file."""

    #: built-in corpus: "stsb" (fetched STS Benchmark) or "bc5cdr" (embedded); or a Hugging Face
    #: ``datasets`` id as "hf:ID" or "hf:ID:CONFIG" (e.g. hf:glue:stsb; needs ``pip install datasets``
    #: and network).
    source: str | None = None
    #: split of a built-in corpus or of a Hugging Face dataset.
    split: str | None = None
    #: a local file (format from the extension unless ``format`` is given).
    path: str | None = None
    format: Literal["auto", "stsb", "csv", "tsv", "jsonl", "conll", "text"] = "auto"
    #: field -> column of the file: text_a, text_b, label (csv/tsv/jsonl/HF);
    #: for CoNLL: token/tag column numbers.
    columns: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: keep the first N examples (before ``sample``).
    limit: int | None = None
    #: keep a random sample of N examples (drawn with ``sample_seed``; same for every run).
    sample: int | None = None
    sample_seed: int = 0

    @property
    def hf(self) -> str | None:
        """The Hugging Face ``datasets`` id of ``source: hf:ID[:CONFIG]`` (None for another source)."""
        return _hf_parts(self.source)[0]

    @property
    def hf_config(self) -> str | None:
        """The dataset configuration of ``source: hf:ID:CONFIG`` (None without one)."""
        return _hf_parts(self.source)[1]


#: ``source: hf:ID[:CONFIG]``: a Hugging Face ``datasets`` id (a dataset id holds no ':')
HF_PREFIX = "hf:"


def _hf_parts(source: str | None) -> tuple[str | None, str | None]:
    if not isinstance(source, str) or not source.startswith(HF_PREFIX):
        return None, None
    ident, _, config = source[len(HF_PREFIX):].partition(":")
    return ident, (config or None)


@dataclasses.dataclass
class DataConfig:
    train: DataSource | None = None
    eval: DataSource | None = None
    test: DataSource | None = None
    #: unlabelled text for silver labels (prior.silver; docs/silver.md): a file or a split whose
    #: labels are ignored (CoNLL, or format: text -- one sentence a line, words split on spaces);
    #: null: the rest of data.train (the part not in the run's training subset), labels hidden.
    unlabeled: DataSource | None = None
    #: true: data.unlabeled may hold sentences of data.eval or data.test (silver labels on the
    #: scored text, on purpose: transductive); false: such an overlap (sentences of 5 or more
    #: words, compared by their words) stops the run with an error (docs/silver.md).
    transductive: bool = False
    #: token classification: keep only these entity types (their B-/I- tags); every other
    #: type's tags become O in every split, e.g. [Disease] for BC5CDR's disease mentions alone.
    #: null: all types.
    entity_types: list[str] | None = None


@dataclasses.dataclass
class PriorConfig(PriorSpec):
    """A pipeline's prior setting: a :class:`~priorkit.providers.spec.PriorSpec` (provider, params,
    preset, layout, keys, neutral, stop_words, stop_value, within: what is built, with its
    rules) plus the fields only a pipeline has."""

    #: a registered provider name; a pipeline's prior defaults to wordnet (whose default
    #: measure is the paper's xia2021).
    provider: str | None = "wordnet"
    #: label used in folders, tables and plots (defaults to the sweep key or "prior").
    name: str | None = None
    #: "auto": runs/<name>/cache/<provider fingerprint>.duckdb, filled by the
    #: precompute step; null: no cache (values computed while training); or a path.
    cache: str | None = "auto"
    #: null: no attention prior (a features-only setting).
    attention: AttentionConfig | None = dataclasses.field(default_factory=AttentionConfig)
    #: token features from the provider's concept matches (token classification only;
    #: docs/features.md); null: none.
    features: FeatureConfig | None = None
    #: silver labels: the provider's matches label unlabelled text (data.unlabeled) that the
    #: model trains on with the gold labels (token classification only; docs/silver.md); null: none.
    silver: SilverConfig | None = None
    #: calibrate the dictionary on the run's gold subset before training: forms the gold
    #: shows wrong too often are dropped from the features' and the silver labels' matches,
    #: and the dictionary's quality is printed (docs/calibration.md); null: off.
    calibrate: CalibrateConfig | None = None
    #: more channels (docs/channels.md): channel name -> its own section, for channels
    #: registered with ``priorkit.channels.register_channel``; each is checked and filled in as
    #: the dataclass the channel declares (``Channel.config``), found through the channel registry.
    channels: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: train-section fields for runs with this prior setting (e.g. a learning rate tuned
    #: for it by ``priorkit tune``); runs without a prior keep the file's ``train``.
    train: dict[str, Any] = dataclasses.field(default_factory=dict)
    # spec(): what this setting builds, as a plain PriorSpec (PriorSpec.spec, in priorkit/spec.py:
    # the channels call it, and a method of this module would be the pipeline called back)


@dataclasses.dataclass
class TrainConfig:
    epochs: float = 3.0
    learning_rate: float = 5e-5
    batch_size: int = 32
    eval_batch_size: int = 64
    #: linear warm-up: a ratio of all steps when < 1, else a step count.
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    gradient_accumulation: int = 1
    #: stop after this many optimiser steps (-1: run all epochs).
    max_steps: int = -1
    seed: int = 0
    #: share of the (already sliced) training set to train on, in (0, 1].
    fraction: float = 1.0
    #: "nested": one permutation drawn with ``subset_seed``; a fraction keeps its
    #: first n examples, so 5% is inside 10% and every seed and every prior
    #: setting sees the same subset.  "per-seed": the permutation is drawn with
    #: the run's seed (still identical across prior settings).
    subset: Literal["nested", "per-seed"] = "nested"
    subset_seed: int = 0
    #: batches of similar length (less padding: faster on CPU).
    group_by_length: bool = False
    #: checkpoint every epoch ("epoch"), every N optimiser steps (a number) or never ("no").
    save: Union[Literal["epoch", "no"], int] = "epoch"
    #: delete checkpoints once the final model is saved.
    keep_checkpoints: bool = False
    #: keep the final model (delete it to save disk in big sweeps; metrics stay).
    keep_model: bool = True
    logging_steps: int = 10
    #: CPU threads for torch (null: all cores).
    threads: int | None = None
    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"
    dataloader_workers: int = 0
    progress: bool = True
    #: mixed precision on GPU ("no" on CPU).
    precision: Literal["no", "fp16", "bf16"] = "no"
    #: trackers for the training curves and scores, by Hugging Face's names: "none",
    #: "all", "tensorboard", "mlflow" or a list (docs/pipelines.md, "Trackers").
    report_to: str | list[str] = "none"


@dataclasses.dataclass
class EngineConfig:
    """Where the work that can leave the run's process runs: the precompute step that fills the
    prior cache, and a self-training teacher's labelling of the unlabelled text (docs/scaling.md).
    The results are the same on either engine."""

    #: "local": this process (precompute: one transaction per batch); "dask": Dask workers
    #: (``pip install 'priorkit[distributed]'``): precompute computes Parquet shards that the cache
    #: ingests, the teacher labels chunks of the text, each worker loading it once.
    type: Literal["local", "dask"] = "local"
    #: dask: worker processes of a local cluster (when no scheduler is given).
    workers: int = 2
    #: dask: address of a running scheduler (tcp://host:8786); null: a local cluster.
    scheduler: str | None = None
    #: precompute: pairs per committed transaction (local: a kill loses at most one batch) or per
    #: shard (dask: one task, one Parquet file); null: 50,000 local, 20,000 dask.
    batch_size: int | None = None
    #: precompute on dask: folder for the shards, shared with remote workers; null: <cache>.shards.
    shard_dir: str | None = None

    def engine_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`priorkit.precompute.make_engine` for this engine."""
        if self.type == "local":
            return {"batch_size": self.batch_size or 50_000}
        return {"workers": None if self.scheduler else self.workers, "scheduler": self.scheduler,
                "shard_size": self.batch_size or 20_000, "shard_dir": self.shard_dir}

    def teacher_options(self) -> dict[str, Any]:
        """Where a self-training teacher labels: the keyword arguments of
        :func:`priorkit.tagging.teacher.fill_store` (engine, workers, scheduler)."""
        return {"engine": self.type, "workers": None if self.scheduler else self.workers,
                "scheduler": self.scheduler}


@dataclasses.dataclass
class PosthocConfig:
    """A sweep arm that trains nothing: a trained setting's saved predictions merged with a
    dictionary's matches afterwards (token classification; docs/pipelines.md#post-hoc-arms)."""

    #: the setting of ``sweep.priors`` whose runs (same fraction and seed) are merged.
    of: str = "none"
    #: union: a match becomes an entity where the model found none on its words;
    #: override: matches replace the model's entities they overlap.
    merge: Literal["union", "override"] = "union"
    #: the provider whose concept matches are merged (one with matches, e.g. ontology).
    provider: str = "ontology"
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: match group -> entity type, in priority order; null: the pipeline's task.dictionary_types.
    types: dict[str, str] | None = None
    #: calibrate the dictionary on each run's gold subset first (docs/calibration.md); null: as it is.
    calibrate: CalibrateConfig | None = None
    #: settings whose kept models are mixed with ``of``'s word by word (docs/inference.md#ensembles)
    #: instead of a dictionary merge; needs train.keep_model. Empty: the dictionary merge above.
    mix: list[str] = dataclasses.field(default_factory=list)
    #: with ``mix``: each model's share, ``of`` first (null: equal shares).
    weights: list[float] | None = None
    #: with ``mix``: argmax | viterbi (null: task.decode) and the O bias (null: task.o_bias).
    decode: Literal["argmax", "viterbi"] | None = None
    o_bias: float | None = None
    #: after the merge or the mix: where the model splits one dictionary entity into two or more
    #: entities of its type ("migraine" + "aura" in "migraine with aura") and none of its entities
    #: crosses that entity's edges, the dictionary entity replaces the pieces.
    fragments: bool = False
    #: after that: the dictionary read over the whole split in order, abbreviations defined in one
    #: sentence recognised in the next ``document`` sentences (-1: to the end); its entities that the
    #: sentence-by-sentence matches lack are added where the model predicted no entity. null: off.
    document: int | None = None


@dataclasses.dataclass
class DictionaryConfig:
    """``sweep.dictionary``: a provider with concept matches and its type map."""

    #: the provider whose concept matches are the dictionary (one with matches, e.g. ontology).
    provider: str = "ontology"
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: match group -> entity type, in priority order; null: the pipeline's task.dictionary_types.
    types: dict[str, str] | None = None


@dataclasses.dataclass
class SweepConfig:
    fractions: list[float] = dataclasses.field(default_factory=lambda: [1.0])
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0])
    #: name -> prior setting: null = no prior, {} = the file's ``prior``, a mapping
    #: = the file's ``prior`` with these fields replaced (nested: attention.mode ...).
    #: null (default): "none" and the file's ``prior`` under its name.
    priors: dict[str, Any] | None = None
    #: fraction -> train fields for runs at that fraction (e.g. {1.0: {epochs: 2}}):
    #: small fractions usually need more epochs; every prior setting gets the same.
    per_fraction: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: the setting deltas are measured against (usually the no-prior entry).
    baseline: str = "none"
    #: setting -> its control setting (both in ``priors``): a knowledge-free twin of the
    #: prior (shuffled values, random-spans features); the setting pays off only when it
    #: beats the baseline and its control (controls.md, docs/pipelines.md#controls).
    controls: dict[str, str] = dataclasses.field(default_factory=dict)
    #: name -> a post-hoc arm (PosthocConfig): no training, a trained setting's predictions
    #: merged with a dictionary's matches; every knowledge setting is also judged against it.
    posthoc: dict[str, PosthocConfig] = dataclasses.field(default_factory=dict)
    #: which evaluated split the table reports ("eval" or "test").
    split: Literal["eval", "test"] = "eval"
    #: token classification: the dictionary the report measures recall inside and outside of;
    #: null: the file prior's provider when it has concept matches (docs/pipelines.md, "Inside and
    #: outside the dictionary").
    dictionary: DictionaryConfig | None = None
    plot: bool = True


@dataclasses.dataclass
class ParamSpace:
    """One dimension of a ``tune.space``: a categorical ``choice`` or a numeric range."""

    #: a list of values, or a mapping label -> value; a mapping value applied to a
    #: section is merged into it (e.g. ``prior: {choice: {combo: {provider: combine, ...}}}``).
    choice: Any = None
    #: numeric range [low, high] (both given, low < high).
    low: float | None = None
    high: float | None = None
    #: sample on a log scale (low > 0).
    log: bool = False
    #: whole numbers only.
    integer: bool = False
    #: grid step of the range (null: continuous).
    step: float | None = None
    #: sample only when each named parameter took one of the given values, e.g.
    #: ``{prior.attention.mode: [bias, learned_bias]}``; otherwise the field keeps its value.
    when: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ValidationConfig:
    #: examples held out of data.train to score trials: a count (>= 1) or a share (< 1).
    size: float = 0.15
    #: the hold-out is drawn with this seed (the same for every trial and the baseline).
    seed: int = 0


@dataclasses.dataclass
class PrunerConfig:
    #: "median": stop a trial whose validation score after an epoch is below the median of
    #: earlier trials at that epoch; "hyperband": successive halving over epochs;
    #: "threshold": stop a trial whose score leaves [lower, upper]; "none".
    type: Literal["median", "hyperband", "threshold", "none"] = "median"
    #: median: trials that run to the end before any is pruned.
    startup_trials: int = 4
    #: median, threshold: epochs every trial runs before it can be pruned.
    warmup_epochs: int = 1
    #: threshold: the score range [lower, upper] a trial must stay in; null for an open end
    #: (e.g. [0.5, null]).
    bounds: list[float | None] | None = None


@dataclasses.dataclass
class FinalConfig:
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1, 2, 3, 4])
    #: training fractions of the final runs (null: tune.fraction).
    fractions: list[float] | None = None
    #: the settings the best one is compared with (sweep.priors form); null: no prior
    #: and the file's ``prior`` (when it has one).
    compare: dict[str, Any] | None = None
    #: the split the final table reports ("eval" or "test"); never the validation slice.
    split: Literal["eval", "test"] = "eval"


@dataclasses.dataclass
class ArmConfig:
    """One arm of ``tune.arms``: a prior setting with its own search (docs/tune.md#arms)."""

    #: null: no prior; a mapping: merged over the file's ``prior`` ({} = the file's prior).
    prior: Any = dataclasses.field(default_factory=dict)
    #: dotted field -> ParamSpace searched for this arm (at least one field).
    space: dict[str, ParamSpace] = dataclasses.field(default_factory=dict)
    #: the arm this one is the control of (e.g. a shuffled prior of ``attention``).
    control_of: str | None = None


@dataclasses.dataclass
class TuneConfig:
    #: finished (complete or pruned) trials the study should hold; a resumed or
    #: parallel run stops when the study has this many.  (A time limit per process:
    #: ``priorkit tune --timeout SECONDS``.)
    trials: int = 20
    #: training fraction of every trial (of data.train minus the validation slice).
    fraction: float = 0.1
    #: seeds of every trial; the objective is the mean validation score over them and each
    #: is compared with the no-prior baseline of the same seed.
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0])
    validation: ValidationConfig = dataclasses.field(default_factory=ValidationConfig)
    #: "grid" tries every combination of finite choices (automatic when every field is a
    #: choice without ``when`` and ``trials`` covers the grid).
    sampler: Literal["tpe", "random", "grid"] = "tpe"
    sampler_seed: int = 0
    pruner: PrunerConfig = dataclasses.field(default_factory=PrunerConfig)
    #: dotted field -> ParamSpace, sampled in file order (a ``when`` refers to earlier ones).
    space: dict[str, ParamSpace] = dataclasses.field(default_factory=dict)
    #: name -> arm: every arm gets its own study of ``trials`` trials over its own space
    #: (replaces ``space``); the final table compares the arms' best settings.
    arms: dict[str, ArmConfig] | None = None
    #: the best setting re-run against the comparison settings once the study is done
    #: (``priorkit tune --no-final``: not).
    final: FinalConfig = dataclasses.field(default_factory=FinalConfig)


@dataclasses.dataclass
class PipelineConfig:
    name: str
    description: str = ""
    #: default runs/<name> (relative paths are relative to the working directory).
    output_dir: str | None = None
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    #: the prior ``priorkit run`` uses (null: no prior).
    prior: PriorConfig | None = None
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    #: where the precompute step and a self-training teacher's labelling run (local or Dask).
    engine: EngineConfig = dataclasses.field(default_factory=EngineConfig)
    #: which splits the evaluate step scores (null: every configured one of eval and test).
    evaluate: list[Literal["eval", "test"]] | None = None
    sweep: SweepConfig = dataclasses.field(default_factory=SweepConfig)
    #: ``priorkit tune``: search space, budget, pruning (docs/tune.md); null: no study.
    tune: TuneConfig | None = None

    # set by the loader (not part of the YAML)
    source: str = dataclasses.field(default="<dict>", compare=False, repr=False, metadata={"internal": True})
    locations: dict = dataclasses.field(default_factory=dict, compare=False, repr=False,
                                        metadata={"internal": True})
    #: the mapping as written (overrides applied, defaults not filled in)
    raw: dict = dataclasses.field(default_factory=dict, compare=False, repr=False, metadata={"internal": True})

    # ---- helpers ------------------------------------------------------
    @property
    def out_dir(self) -> Path:
        return Path(self.output_dir) if self.output_dir else Path("runs") / self.name

    def to_dict(self) -> dict[str, Any]:
        """The validated config as plain data (defaults filled in), without loader fields."""
        d = dataclasses.asdict(self)
        d.pop("source", None)
        d.pop("locations", None)
        d.pop("raw", None)
        return d

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def where(self, path: str) -> str:
        """``file:line`` of a dotted field, or the file when unknown."""
        return _where(self.locations, tuple(path.split(".")), self.source)
