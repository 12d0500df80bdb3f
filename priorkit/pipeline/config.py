"""Pipeline files: YAML in, typed and validated dataclasses out.

A pipeline file describes one job (model, task, data, prior, training, sweep
grid).  Loading keeps the line of every field, so a bad value is reported as
``pipelines/x.yaml:14: train.learning_rate: expected a number, got 'fast'``
instead of a stack trace from deep inside training.  Command-line overrides
(``--set train.fraction=0.1``) are applied to the raw tree before validation
and are named as the culprit when they are wrong.

The schema *is* the dataclasses below: a field's type hint and default are
what the validator checks and fills in, so docs/pipelines.md, the validator
and the code that reads the config cannot drift apart.
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from ..errors import PriorkitError

TASK_TYPES = ("regression", "pair-classification", "token-classification")


class ConfigError(PriorkitError, ValueError):
    """A pipeline file or override is malformed; the message names file, line and field."""


# ---------------------------------------------------------------------------
# schema
# ---------------------------------------------------------------------------
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


@dataclasses.dataclass
class DataSource:
    """One split: a built-in corpus, a file, or a Hugging Face ``datasets`` id."""

    #: built-in corpus: "stsb" (fetched STS Benchmark) or "bc5cdr" (embedded).
    source: str | None = None
    #: split of a built-in corpus or of a Hugging Face dataset.
    split: str | None = None
    #: a local file (format from the extension unless ``format`` is given).
    path: str | None = None
    format: Literal["auto", "stsb", "csv", "tsv", "jsonl", "conll"] = "auto"
    #: field -> column of the file: text_a, text_b, label (csv/tsv/jsonl/HF);
    #: for CoNLL: token/tag column numbers.
    columns: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Hugging Face ``datasets`` id (needs ``pip install datasets`` and network).
    hf: str | None = None
    hf_config: str | None = None
    #: keep the first N examples (before ``sample``).
    limit: int | None = None
    #: keep a random sample of N examples (drawn with ``sample_seed``; same for every run).
    sample: int | None = None
    sample_seed: int = 0


@dataclasses.dataclass
class DataConfig:
    train: DataSource | None = None
    eval: DataSource | None = None
    test: DataSource | None = None


@dataclasses.dataclass
class AttentionConfig:
    #: layer indices, or "all".
    layers: Union[list[int], Literal["all"]] = dataclasses.field(default_factory=lambda: [0])
    mode: Literal["multiply", "bias", "gate", "learned_bias", "supervise"] = "multiply"
    #: head indices that get the prior; null = all heads.
    heads: list[int] | None = None
    #: extra keyword arguments of the mode (bias: lam, eps; gate: init;
    #: learned_bias: init, eps; supervise: weight, power).
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: gate / learned_bias: the learnable prior parameters' own learning rate (null:
    #: train.learning_rate).  A gate next to pretrained weights tuned at 5e-5 barely
    #: moves at that rate.
    learning_rate: float | None = None


@dataclasses.dataclass
class PriorConfig:
    #: label used in folders, tables and plots (defaults to the sweep key or "prior").
    name: str | None = None
    #: "paper": PriorBuilder.paper (xia2021 WordNet unless ``provider`` is given);
    #: null: PriorBuilder(provider, layout, neutral, keys).
    preset: Literal["paper"] | None = None
    provider: str = "wordnet"
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    layout: Literal["paper", "full"] = "full"
    neutral: float = 1.0
    keys: Literal["strip", "paper"] = "strip"
    #: full layout, cells between tokens of one word or phrase: "all" = 1 for every word;
    #: "known" = the provider's value of the phrase with itself (e.g. a recognised concept
    #: mention), other words' pieces get ``neutral``.
    within: Literal["all", "known"] = "all"
    #: "auto": runs/<name>/cache/<provider fingerprint>.duckdb, filled by the
    #: precompute step; null: no cache (values computed while training); or a path.
    cache: str | None = "auto"
    attention: AttentionConfig = dataclasses.field(default_factory=AttentionConfig)
    #: train-section fields for runs with this prior setting (e.g. a learning rate tuned
    #: for it by ``priorkit tune``); runs without a prior keep the file's ``train``.
    train: dict[str, Any] = dataclasses.field(default_factory=dict)


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
    #: checkpoint every epoch ("epoch"), every ``save_steps`` ("steps") or never ("no").
    save: Literal["epoch", "steps", "no"] = "epoch"
    save_steps: int = 500
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
    #: which evaluated split the table reports ("eval" or "test").
    split: Literal["eval", "test"] = "eval"
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
    #: threshold: the score range a trial must stay in (null: open).
    lower: float | None = None
    upper: float | None = None


@dataclasses.dataclass
class FinalConfig:
    #: re-run the best setting against the comparison settings once the study is done.
    enabled: bool = True
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1, 2, 3, 4])
    #: training fractions of the final runs (null: tune.fraction).
    fractions: list[float] | None = None
    #: the settings the best one is compared with (sweep.priors form); null: no prior
    #: and the file's ``prior`` (when it has one).
    compare: dict[str, Any] | None = None
    #: the split the final table reports ("eval" or "test"); never the validation slice.
    split: Literal["eval", "test"] = "eval"


@dataclasses.dataclass
class TuneConfig:
    #: finished (complete or pruned) trials the study should hold; a resumed or
    #: parallel run stops when the study has this many.
    trials: int = 20
    #: seconds one ``priorkit tune`` process may spend on trials (null: no limit).
    timeout: float | None = None
    #: training fraction of every trial (of data.train minus the validation slice).
    fraction: float = 0.1
    #: seeds of every trial; the objective is the mean validation score over them and each
    #: is compared with the no-prior baseline of the same seed.
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0])
    validation: ValidationConfig = dataclasses.field(default_factory=ValidationConfig)
    sampler: Literal["tpe", "random"] = "tpe"
    sampler_seed: int = 0
    pruner: PrunerConfig = dataclasses.field(default_factory=PrunerConfig)
    #: dotted field -> ParamSpace, sampled in file order (a ``when`` refers to earlier ones).
    space: dict[str, ParamSpace] = dataclasses.field(default_factory=dict)
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

    def prior_settings(self) -> dict[str, PriorConfig | None]:
        """The sweep's prior settings, each resolved to a full :class:`PriorConfig`."""
        return resolve_sweep_priors(self)

    def for_fraction(self, fraction: float, prior: "PriorConfig | None" = None) -> "PipelineConfig":
        """This config with ``sweep.per_fraction``'s train fields for ``fraction`` applied,
        then the prior setting's own ``train`` fields."""
        update = {**_per_fraction_entry(self, fraction), **(prior.train if prior is not None else {})}
        if not update:
            return self
        train = _convert({**dataclasses.asdict(self.train), **update}, TrainConfig, ("train",),
                         self.locations, self.source)
        return dataclasses.replace(self, train=train)


# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------
def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> PipelineConfig:
    """Read a pipeline YAML file, apply ``a.b=c`` overrides, validate."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"pipeline file {path} does not exist") from None
    except OSError as exc:  # a folder, no permission ...
        raise ConfigError(f"pipeline file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"{path}:{line}:{column}: not UTF-8 ({exc.reason}); save the file as UTF-8") from None
    raw, locations = parse_yaml(text, str(path))
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}:1: a pipeline file must be a mapping of sections, got {type(raw).__name__}")
    raw.setdefault("name", path.stem)
    return config_from_dict(raw, source=str(path), locations=locations, overrides=overrides)


def config_from_dict(raw: dict[str, Any], *, source: str = "<dict>", locations: dict | None = None,
                     overrides: list[str] | tuple[str, ...] = ()) -> PipelineConfig:
    """Validate a raw mapping (as read from YAML) into a :class:`PipelineConfig`."""
    raw = copy.deepcopy(raw)
    locations = dict(locations or {})
    for item in overrides:
        key, value = parse_override(item)
        set_path(raw, key, value, item)
        locations[tuple(key)] = f"--set {item}"
        # Children of the replaced value now come from the override, too.
        for k in [k for k in locations if len(k) > len(key) and k[: len(key)] == tuple(key)]:
            locations[k] = f"--set {item}"
    cfg = _convert(raw, PipelineConfig, (), locations, source)
    cfg.source = source
    cfg.locations = locations
    cfg.raw = copy.deepcopy(raw)
    _check(cfg)
    return cfg


def parse_yaml(text: str, source: str) -> tuple[Any, dict[tuple, int]]:
    """YAML -> (data, {field path: line}).  Syntax errors name file, line and column."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        _check_nodes(node, source)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = " ".join(x for x in (exc.context, exc.problem) if x)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[tuple, int] = {}
    _collect_lines(node, (), lines)
    return data, lines


def _check_nodes(node: yaml.Node, source: str) -> None:
    """Refuse what PyYAML accepts silently: a key given twice (the last would win)
    and an anchor that contains itself (cyclic data; every walk over it would recurse forever)."""
    done: set[int] = set()
    stack: list[tuple[yaml.Node, tuple, bool]] = [(node, (), False)]
    active: set[int] = set()
    while stack:
        n, path, leaving = stack.pop()
        if leaving:
            active.discard(id(n))
            done.add(id(n))
            continue
        if id(n) in active:
            raise ConfigError(f"{source}:{n.start_mark.line + 1}:{n.start_mark.column + 1}: "
                              f"{_dotted(path)}: an alias refers to a node that contains it (cyclic data); "
                              "pipeline files cannot hold recursive structures")
        if id(n) in done:
            continue
        active.add(id(n))
        stack.append((n, path, True))
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in n.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is not None and key != "<<":
                    if key in seen:
                        mark = key_node.start_mark
                        raise ConfigError(f"{source}:{mark.line + 1}:{mark.column + 1}: {_dotted(path + (key,))}: "
                                          f"given twice (first on line {seen[key]}); remove one")
                    seen[key] = key_node.start_mark.line + 1
                stack.append((value_node, path + (key if key is not None else "?",), False))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((item, path + (i,), False) for i, item in enumerate(n.value))


def _dotted(path: tuple) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _collect_lines(node: yaml.Node, path: tuple, lines: dict[tuple, int], seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen:  # an aliased node: walked once (an alias "bomb" would be exponential)
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            lines[path + (key,)] = key_node.start_mark.line + 1
            _collect_lines(value_node, path + (key,), lines, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _collect_lines(item, path + (i,), lines, seen)


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"train.fraction=0.1"`` -> (["train", "fraction"], 0.1); the value is YAML."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set train.fraction=0.1")
    key, value = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set {item!r}: the field must be a dotted name such as train.learning_rate")
    try:
        parsed = yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {item!r}: the value is not valid YAML: {exc}") from None
    return key.split("."), parsed


def set_path(raw: dict, key: list[str], value: Any, item: str) -> None:
    node = raw
    for i, part in enumerate(key[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(
                f"--set {item}: {'.'.join(key[: i + 1])} is {type(nxt).__name__}, not a section; "
                f"cannot set {'.'.join(key)}"
            )
        node = nxt
    node[key[-1]] = value


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
def _where(locations: dict, path: tuple, source: str) -> str:
    """Best location for a field: its own line, else its nearest parent's."""
    p = tuple(path)
    while True:
        loc = locations.get(p)
        if loc is not None:
            return loc if isinstance(loc, str) else f"{source}:{loc}"
        if not p:
            return source
        p = p[:-1]


def _fail(path: tuple, locations: dict, source: str, message: str) -> ConfigError:
    return ConfigError(f"{_where(locations, path, source)}: {_dotted(path)}: {message}")


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is list:
        return f"a list of {_describe(typing.get_args(tp)[0])}"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _convert(value: Any, tp: Any, path: tuple, loc: dict, source: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise _fail(path, loc, source, f"must not be empty; expected {_describe(tp)}")
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, path, loc, source)
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise _fail(path, loc, source, f"expected {_describe(tp)}, got {value!r}")
    if origin is Literal:
        choices = typing.get_args(tp)
        if value in choices:
            return value
        near = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise _fail(path, loc, source, f"expected one of {', '.join(map(repr, choices))}, got {value!r}{hint}")
    if dataclasses.is_dataclass(tp):
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise _fail(path, loc, source, f"expected a mapping (a section), got {type(value).__name__} {value!r}")
        hints = typing.get_type_hints(tp)
        fields = {f.name: f for f in dataclasses.fields(tp) if not f.metadata.get("internal")}
        for key in value:
            if key not in fields:
                near = difflib.get_close_matches(str(key), list(fields), n=1)
                hint = f"; did you mean {'.'.join(map(str, path + (near[0],)))!r}?" if near else ""
                raise _fail(path + (key,), loc, source,
                            f"unknown field{hint} (known: {', '.join(fields)})")
        kwargs = {}
        for name, f in fields.items():
            if name in value:
                kwargs[name] = _convert(value[name], hints[name], path + (name,), loc, source)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _fail(path + (name,), loc, source, "is required")
        return tp(**kwargs)
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if value is None:
            raise _fail(path, loc, source, f"expected {_describe(tp)}, got nothing")
        items = value if isinstance(value, list) else [value]  # `--set sweep.seeds=0` means [0]
        return [_convert(v, item_tp, path + (i,), loc, source) for i, v in enumerate(items)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(path, loc, source, f"expected a mapping, got {type(value).__name__} {value!r}")
        _, val_tp = typing.get_args(tp)
        return {str(k): _convert(v, val_tp, path + (k,), loc, source) for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _fail(path, loc, source, f"expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _fail(path, loc, source, f"expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # PyYAML reads 5e-5 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise _fail(path, loc, source, f"expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise _fail(path, loc, source, f"expected a string, got {type(value).__name__} {value!r}")
    raise TypeError(f"config schema: unsupported type {tp!r} at {'.'.join(map(str, path))}")


DEFAULT_METRICS = {"regression": "spearman", "pair-classification": "accuracy", "token-classification": "f1"}
TASK_METRICS = {
    "regression": ("spearman", "pearson", "mse"),
    "pair-classification": ("accuracy", "f1"),
    "token-classification": ("f1", "precision", "recall", "accuracy"),
}


def _check(cfg: PipelineConfig) -> None:
    """Cross-field rules the types alone cannot say."""
    loc, src = cfg.locations, cfg.source

    def fail(path: str, msg: str) -> ConfigError:
        return _fail(tuple(path.split(".")), loc, src, msg)

    if not cfg.name or any(c in cfg.name for c in "/\\") or cfg.name in (".", ".."):
        raise fail("name", f"{cfg.name!r} is not usable as a folder name")
    t = cfg.task
    if t.metric is None:
        t.metric = DEFAULT_METRICS[t.type]
    elif t.metric not in TASK_METRICS[t.type]:
        raise fail("task.metric", f"{t.metric!r} is not a {t.type} metric; choose one of {', '.join(TASK_METRICS[t.type])}")
    if t.label_scale <= 0:
        raise fail("task.label_scale", f"must be positive, got {t.label_scale}")
    if cfg.model.max_length < 8:
        raise fail("model.max_length", f"must be at least 8, got {cfg.model.max_length}")
    for split in ("train", "eval", "test"):
        src_cfg = getattr(cfg.data, split)
        if src_cfg is None:
            continue
        given = [k for k in ("source", "path", "hf") if getattr(src_cfg, k)]
        if len(given) != 1:
            raise fail(f"data.{split}",
                       "give exactly one of source (stsb, bc5cdr), path (a file) or hf (a datasets id); "
                       f"got {', '.join(given) or 'none'}")
        if src_cfg.source is not None and src_cfg.source not in BUILTIN_SOURCES:
            raise fail(f"data.{split}.source",
                       f"unknown built-in corpus {src_cfg.source!r}; choose one of {', '.join(BUILTIN_SOURCES)} "
                       "or give path: FILE")
        for k in ("limit", "sample"):
            v = getattr(src_cfg, k)
            if v is not None and v <= 0:
                raise fail(f"data.{split}.{k}", f"must be a positive count, got {v}")
    if cfg.data.train is None:
        raise fail("data.train", "is required (the training split)")
    if cfg.evaluate is None:
        cfg.evaluate = [s for s in ("eval", "test") if getattr(cfg.data, s) is not None]
        if not cfg.evaluate:
            raise fail("data", "give data.eval (or data.test): runs are scored on it")
    for split in cfg.evaluate:
        if getattr(cfg.data, split) is None:
            raise fail("evaluate", f"lists {split!r} but data.{split} is not set")
    tr = cfg.train
    if not 0.0 < tr.fraction <= 1.0:
        raise fail("train.fraction", f"must lie in (0, 1], got {tr.fraction}")
    for name in ("batch_size", "eval_batch_size", "gradient_accumulation", "logging_steps", "save_steps"):
        if getattr(tr, name) < 1:
            raise fail(f"train.{name}", f"must be at least 1, got {getattr(tr, name)}")
    if tr.learning_rate <= 0:
        raise fail("train.learning_rate", f"must be positive, got {tr.learning_rate}")
    if tr.epochs <= 0 and tr.max_steps <= 0:
        raise fail("train.epochs", "must be positive (or set train.max_steps)")
    if tr.warmup < 0:
        raise fail("train.warmup", f"must not be negative, got {tr.warmup}")
    if tr.threads is not None and tr.threads < 1:
        raise fail("train.threads", f"must be at least 1, got {tr.threads}")
    sw = cfg.sweep
    for i, f in enumerate(sw.fractions):
        if not 0.0 < f <= 1.0:
            raise _fail(("sweep", "fractions", i), loc, src, f"fractions must lie in (0, 1], got {f}")
    if not sw.fractions or not sw.seeds or sw.priors == {}:
        raise fail("sweep", "fractions, seeds and priors must each have at least one entry")
    for key, update in sw.per_fraction.items():
        path = ("sweep", "per_fraction", key)
        try:
            f = float(key)
        except ValueError:
            raise _fail(path, loc, src, f"keys must be fractions such as 0.1, got {key!r}") from None
        if not 0.0 < f <= 1.0:
            raise _fail(path, loc, src, f"fractions must lie in (0, 1], got {f}")
        _convert({**dataclasses.asdict(tr), **update}, TrainConfig, path, loc, src)  # validate the fields
        if "fraction" in update or "seed" in update:
            raise _fail(path, loc, src, "fraction and seed are set by the sweep, not per fraction")
    if sw.split not in cfg.evaluate:
        raise fail("sweep.split", f"{sw.split!r} is not evaluated; add it to `evaluate`")
    if cfg.prior is not None:
        _check_prior(cfg.prior, ("prior",), cfg)
    settings = resolve_sweep_priors(cfg)
    if sw.baseline not in settings:
        raise fail("sweep.baseline", f"{sw.baseline!r} is not one of sweep.priors ({', '.join(settings)})")


BUILTIN_SOURCES = ("stsb", "bc5cdr")


def _per_fraction_entry(cfg: PipelineConfig, fraction: float) -> dict[str, Any]:
    for key, update in cfg.sweep.per_fraction.items():
        if abs(float(key) - fraction) < 1e-9:
            return dict(update)
    return {}


def _check_prior(p: PriorConfig, path: tuple, cfg: PipelineConfig) -> None:
    loc, src = cfg.locations, cfg.source
    layout = "paper" if p.preset == "paper" else p.layout
    if layout == "paper" and cfg.task.type == "token-classification":
        where = path + (("preset",) if p.preset == "paper" else ("layout",))
        raise _fail(where, loc, src, "the paper layout needs sentence pairs; token classification "
                    "works on single sentences: use layout: full (and no preset)")
    if p.within != "all" and layout == "paper":
        raise _fail(path + ("within",), loc, src, "the paper layout has no within-word cells; use within: all")
    if not 0.0 <= p.neutral <= 1.0 and layout == "paper":
        raise _fail(path + ("neutral",), loc, src, f"must lie in [0, 1], got {p.neutral}")
    layers = p.attention.layers
    if layers != "all" and (not layers or any(i < 0 for i in layers)):
        raise _fail(path + ("attention", "layers"), loc, src,
                    f"expected non-negative layer indices or 'all', got {layers!r}")
    if p.train:
        if "fraction" in p.train or "seed" in p.train:
            raise _fail(path + ("train",), loc, src, "fraction and seed are set by the run or sweep, not per prior")
        _convert({**dataclasses.asdict(cfg.train), **p.train}, TrainConfig, path + ("train",), loc, src)
    lr = p.attention.learning_rate
    if lr is not None and (p.attention.mode not in ("gate", "learned_bias") or lr <= 0):
        raise _fail(path + ("attention", "learning_rate"), loc, src,
                    "is the learnable prior parameters' own learning rate: give a positive number with "
                    f"mode: gate or learned_bias (got {lr!r} with mode: {p.attention.mode})")


#: mappings a sweep entry replaces whole instead of merging: a provider's params, a mode's
#: options and a setting's train fields belong together
_REPLACED = ("params", "options", "train")


def _deep_merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k not in _REPLACED:
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def resolve_sweep_priors(cfg: PipelineConfig) -> dict[str, PriorConfig | None]:
    """``sweep.priors`` -> {name: PriorConfig or None}; entries are merged over ``prior``."""
    base = dataclasses.asdict(cfg.prior) if cfg.prior is not None else None
    out: dict[str, PriorConfig | None] = {}
    entries = cfg.sweep.priors
    if entries is None:
        entries = {"none": None}
        if cfg.prior is not None:
            entries[cfg.prior.name or "prior"] = {}
    for name, entry in entries.items():
        path = ("sweep", "priors", name)
        if entry is None or entry == "none":
            out[name] = None
            continue
        if not isinstance(entry, dict):
            raise _fail(path, cfg.locations, cfg.source,
                        "expected null (no prior), {} (the file's prior) or a mapping of prior fields")
        if base is None and not entry:
            raise _fail(path, cfg.locations, cfg.source,
                        "{} means 'the file's prior' but the file has no `prior` section")
        merged = _deep_merge(base or {}, entry)
        merged["name"] = entry.get("name") or name
        pc = _convert(merged, PriorConfig, path, cfg.locations, cfg.source)
        _check_prior(pc, path, cfg)
        out[name] = pc
    return out


# ---------------------------------------------------------------------------
# identity
# ---------------------------------------------------------------------------
def digest(obj: Any) -> str:
    """Short stable hash of JSON-able data (validity keys of step outputs)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
