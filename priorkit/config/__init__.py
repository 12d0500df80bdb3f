"""Pipeline files: YAML in, typed and validated dataclasses out.

- :mod:`.loader`: the generic YAML-to-dataclass checker (lines of every field,
  ``--set`` overrides, type conversion with errors naming file, line and field);
- :mod:`.schema`: the pipeline schema, one dataclass per section -- a field's
  type hint and default are what the loader checks and fills in, so
  docs/pipelines.md, the validator and the code that reads the config cannot
  drift apart;
- :mod:`.checks`: the domain rules across fields; :mod:`.tune_checks`: the ``tune``
  section's (``priorkit tune`` checks them first).

``from priorkit.config import X`` works for every name of the three.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .checks import (BUILTIN_SOURCES, DEFAULT_METRICS, TASK_METRICS, _check, for_fraction,  # noqa: F401
                     prior_settings, resolve_sweep_priors)
from .loader import ConfigError, _convert, apply_overrides, digest, parse_override, parse_yaml, set_path  # noqa: F401
from .schema import (AttentionConfig, DataConfig, DataSource, DictionaryConfig, FinalConfig, ModelConfig,  # noqa: F401
                     ParamSpace, PipelineConfig, PosthocConfig, EngineConfig, PriorConfig, PrunerConfig, SweepConfig,
                     TaskConfig, TrainConfig, TuneConfig, ValidationConfig)
from .tune_checks import check_tune_section  # noqa: F401


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
    apply_overrides(raw, locations, overrides)
    cfg = _convert(raw, PipelineConfig, (), locations, source)
    cfg.source = source
    cfg.locations = locations
    cfg.raw = copy.deepcopy(raw)
    _check(cfg)
    return cfg
