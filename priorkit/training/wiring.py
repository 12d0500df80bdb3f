"""The prior's wiring for one run: threads and device, the base model, the cache file, the
channels (from the setting's PriorSpec and their sections) and the one collator."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ..errors import PriorkitError
from . import ranks
from ..config import PipelineConfig, PriorConfig

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
    """The folder or Hub id the run's model loads from: ``model.name_or_path``; the names ``minilm``
    and ``mpnet`` (when no such folder exists here) are the fetched all-MiniLM-L6-v2 and
    all-mpnet-base-v2 (``priorkit data fetch``); null: MiniLM."""
    return encoder_source(cfg.model.name_or_path)


def encoder_source(name: str | None) -> str:
    """``name`` as :func:`model_source` reads it (also a self-training teacher's ``encoder``)."""
    from .. import resources

    named = {"minilm": resources.minilm_path, "mpnet": resources.mpnet_path}
    if not name:
        return str(resources.minilm_path())
    if name in named and not Path(name).exists():
        return str(named[name]())
    return name


def cache_path(cfg: PipelineConfig, prior: PriorConfig | None) -> Path | None:
    if prior is None or prior.cache is None:
        return None
    if prior.cache == "auto":
        return cfg.out_dir / "cache" / "priors.duckdb"
    return Path(prior.cache).expanduser()


def make_builder(cfg: PipelineConfig, prior: PriorConfig | None, tokenizer: Any, *, use_cache: bool = True):
    """The :class:`PriorBuilder` of a prior setting (None for no prior or no attention prior),
    made as the attention channel makes it."""
    if prior is None or prior.attention is None:
        return None
    from ..channels.attention.channel import setting_builder

    path = cache_path(cfg, prior) if use_cache else None
    return setting_builder(prior, tokenizer, cfg.model.max_length, None if path is None else str(path))


def make_channels(cfg: PipelineConfig, prior: PriorConfig | None, tokenizer: Any) -> list[Any]:
    """The channels a prior setting asks for (docs/channels.md), not attached yet."""
    if prior is None:
        return []
    from ..channels import Context, channels_for

    path = cache_path(cfg, prior)
    return channels_for(channel_setting(prior), Context(tokenizer, cfg.model.max_length, cache=str(path) if path else None))


def channel_setting(prior: PriorConfig) -> Any:
    """The prior setting as its channels get it: plain data (a :class:`~priorkit.channels.ChannelSetting`:
    the PriorSpec and each channel's section as a mapping), read here so that no part of the run's
    plan goes down to the channels (the run's silver labels, calibration and train fields stay here)."""
    import dataclasses

    from ..channels.base import CHANNELS, ChannelSetting
    from ..providers.spec import FIELDS, PriorSpec

    def plain(value: Any) -> Any:
        return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else (
            dict(value) if isinstance(value, dict) else value)

    own = {f.name: plain(getattr(prior, f.name)) for f in dataclasses.fields(prior) if f.name in CHANNELS}
    return ChannelSetting(PriorSpec(**{name: plain(getattr(prior, name)) for name in FIELDS}), own,
                          {name: plain(section) for name, section in (prior.channels or {}).items()})


def make_collator(cfg: PipelineConfig, tokenizer: Any, channels: Any = ()):
    """The one collator: one tokenisation per batch, each channel's tensors added."""
    from ..collator import PriorCollator

    return PriorCollator(tokenizer, channels=channels, truncation=True, max_length=cfg.model.max_length)
