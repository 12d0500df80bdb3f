"""A pipeline's ``tune.space``: checking it before any training, sampling it with Optuna,
and applying a sampled setting to the pipeline.

A space maps a dotted field of the pipeline (``prior.attention.mode``,
``train.learning_rate``, ``prior``) to a :class:`~priorkit.config.ParamSpace`.
Parameters are sampled in file order; ``when`` makes one depend on earlier ones
(``lam`` only for ``mode: bias``).  Categorical values may be anything YAML can
say: Optuna stores a *label* (the value itself for scalars, the mapping key or a
JSON text otherwise) and the label is turned back into the value here.

Checking (:func:`check_space`) applies every choice and both ends of every range
to the pipeline and validates the result with the pipeline's own validator, so a
misspelt field, an impossible value or an unknown provider is reported as
``FILE:LINE: tune.space.FIELD: ...`` before anything trains.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any, Iterator

from ..config import ConfigError, ParamSpace, PipelineConfig, config_from_dict

#: sections a space may change; the rest describe the study itself or the data
TUNABLE_ROOTS = ("prior", "train", "model")


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One parameter of the space, ready to sample."""

    path: str  # dotted field
    space: ParamSpace
    labels: tuple[Any, ...] = ()  # categorical labels Optuna stores
    values: tuple[Any, ...] = ()  # the value behind each label

    @property
    def categorical(self) -> bool:
        return self.space.choice is not None

    def value_of(self, label: Any) -> Any:
        return copy.deepcopy(self.values[self.labels.index(label)])

    def candidates(self) -> Iterator[Any]:
        """Every value the check applies: each choice, or both ends of the range."""
        if self.categorical:
            yield from (copy.deepcopy(v) for v in self.values)
        else:
            yield from (_numeric(self.space, self.space.low), _numeric(self.space, self.space.high))


def _numeric(space: ParamSpace, x: float) -> float | int:
    return int(round(x)) if space.integer else float(x)


def _label(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True)


def dimensions(cfg: PipelineConfig) -> list[Dimension]:
    """The space of ``cfg.tune`` as dimensions, with structural errors named by file and line."""
    if cfg.tune is None:
        raise ConfigError(f"{cfg.source}: no `tune` section; add one (docs/tune.md) to use priorkit tune")
    if not cfg.tune.space:
        raise ConfigError(f"{cfg.where('tune')}: tune.space is empty; name at least one field to search")
    out: list[Dimension] = []
    seen: set[str] = set()
    for path, space in cfg.tune.space.items():
        def fail(msg: str, sub: str = "") -> ConfigError:
            field = f"tune.space.{path}" + (f".{sub}" if sub else "")
            return ConfigError(f"{_where(cfg, path, sub)}: {field}: {msg}")

        root = path.split(".")[0]
        if root not in TUNABLE_ROOTS:
            raise fail(f"only fields under {', '.join(TUNABLE_ROOTS)} can be tuned, not {root!r}")
        for dep in space.when:
            if dep not in seen:
                raise fail(f"refers to {dep!r}, which is not an earlier entry of tune.space", "when")
        has_range = space.low is not None or space.high is not None
        if space.choice is not None and has_range:
            raise fail("give either choice or low/high, not both")
        if space.choice is not None:
            choice = space.choice
            if isinstance(choice, dict):
                labels, values = tuple(str(k) for k in choice), tuple(choice.values())
            elif isinstance(choice, list):
                labels, values = tuple(_label(v) for v in choice), tuple(choice)
            else:
                raise fail(f"expected a list or a mapping of choices, got {choice!r}", "choice")
            if not labels:
                raise fail("is empty; give at least one value", "choice")
            if len(set(labels)) != len(labels):
                raise fail("lists a value twice", "choice")
            out.append(Dimension(path, space, labels, values))
        else:
            if space.low is None or space.high is None:
                raise fail("give choice (a list) or both low and high")
            if not (math.isfinite(space.low) and math.isfinite(space.high)) or space.low >= space.high:
                raise fail(f"the range low={space.low:g}, high={space.high:g} is empty or inverted; "
                           "low must be below high")
            if space.log and space.low <= 0:
                raise fail(f"a log range needs low > 0, got {space.low:g}", "low")
            if space.log and space.step is not None:
                raise fail("step and log cannot be combined (Optuna samples one or the other)", "step")
            if space.step is not None and space.step <= 0:
                raise fail(f"must be positive, got {space.step:g}", "step")
            if space.integer and (space.low != int(space.low) or space.high != int(space.high)):
                raise fail("integer ranges need whole-number low and high")
            out.append(Dimension(path, space))
        seen.add(path)
    return out


def _where(cfg: PipelineConfig, path: str, sub: str = "") -> str:
    key = ("tune", "space", path) + ((sub,) if sub else ())
    line = cfg.locations.get(key) or cfg.locations.get(("tune", "space", path))
    if line is None:
        return cfg.where("tune.space")
    return line if isinstance(line, str) else f"{cfg.source}:{line}"


def set_field(raw: dict, path: str, value: Any) -> None:
    """Set a dotted field of a raw pipeline dict; a mapping value merges into a mapping."""
    parts = path.split(".")
    node = raw
    for part in parts[:-1]:
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
        if not isinstance(node, dict):
            raise ConfigError(f"{'.'.join(parts[:-1])} is not a section")
    last = parts[-1]
    if isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last] = _merge(node[last], value)
    else:
        node[last] = copy.deepcopy(value)


def _merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k != "params":
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def active(dim: Dimension, chosen: dict[str, Any]) -> bool:
    """Whether ``dim``'s ``when`` conditions hold for the labels chosen so far."""
    for dep, wanted in dim.space.when.items():
        if dep not in chosen:
            return False
        options = wanted if isinstance(wanted, list) else [wanted]
        if chosen[dep] not in [_label(o) for o in options]:
            return False
    return True


def apply(raw: dict, dims: list[Dimension], params: dict[str, Any]) -> dict:
    """``raw`` (a pipeline dict) with the sampled ``params`` (field -> label/number) applied."""
    out = copy.deepcopy(raw)
    for dim in dims:
        if dim.path not in params:
            continue
        value = dim.value_of(params[dim.path]) if dim.categorical else params[dim.path]
        set_field(out, dim.path, value)
    return out


def suggest(trial: Any, dims: list[Dimension]) -> dict[str, Any]:
    """Sample every active dimension with an ``optuna.Trial``; returns field -> label/number."""
    chosen: dict[str, Any] = {}
    for dim in dims:
        if not active(dim, chosen):
            continue
        s = dim.space
        if dim.categorical:
            chosen[dim.path] = trial.suggest_categorical(dim.path, list(dim.labels))
        elif s.integer:
            chosen[dim.path] = trial.suggest_int(dim.path, int(s.low), int(s.high), step=int(s.step or 1), log=s.log)
        else:
            chosen[dim.path] = trial.suggest_float(dim.path, s.low, s.high, step=s.step, log=s.log)
    return chosen


def check_space(cfg: PipelineConfig, raw: dict, provider_names: set[str] | None = None) -> list[Dimension]:
    """Validate the space before any training: structure, then every candidate value applied
    to the pipeline (conditions satisfied) through the pipeline's own validator.

    ``raw``: the pipeline as plain data (overrides applied).  ``provider_names``: the
    registered providers (checked for ``prior.provider`` values); None skips that check.
    """
    dims = dimensions(cfg)
    base = {k: v for k, v in raw.items() if k != "tune"}
    for i, dim in enumerate(dims):
        # satisfy this dimension's conditions with the first value each condition allows
        context: dict[str, Any] = {}
        for dep, wanted in dim.space.when.items():
            dep_dim = next(d for d in dims[:i] if d.path == dep)
            options = wanted if isinstance(wanted, list) else [wanted]
            label = _label(options[0])
            if dep_dim.categorical and label not in dep_dim.labels:
                raise ConfigError(f"{_where(cfg, dim.path, 'when')}: tune.space.{dim.path}.when: "
                                  f"{dep} has no choice {options[0]!r} (choices: {list(dep_dim.labels)})")
            context[dep] = label if dep_dim.categorical else options[0]
        for value in dim.candidates():
            trial_raw = apply(base, dims, context)
            try:
                set_field(trial_raw, dim.path, value)
                trial_cfg = config_from_dict(trial_raw, source=cfg.source)
            except ConfigError as exc:
                raise ConfigError(f"{_where(cfg, dim.path)}: tune.space.{dim.path}: the value {value!r} "
                                  f"gives an invalid pipeline: {_strip_where(str(exc))}") from None
            if provider_names is not None and trial_cfg.prior is not None:
                name = trial_cfg.prior.provider
                if name not in provider_names:
                    raise ConfigError(f"{_where(cfg, dim.path)}: tune.space.{dim.path}: unknown provider "
                                      f"{name!r}; installed: {', '.join(sorted(provider_names))}")
    return dims


def _strip_where(message: str) -> str:
    """'<dict>:  prior.x: msg' -> 'prior.x: msg' (the location is the space entry's)."""
    head, sep, rest = message.partition(": ")
    return rest if sep and (head.startswith("<") or head.startswith("--set")) else message
