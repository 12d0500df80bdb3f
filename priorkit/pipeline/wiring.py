"""The prior's wiring for one run: threads and device, the base model, the cache file, the
provider and builder (from the setting's PriorSpec), prior attention and the collator."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ..errors import PriorkitError
from . import ranks
from .config import PipelineConfig, PriorConfig

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
    """The :class:`PriorBuilder` of a prior setting (None for no prior or no attention prior)."""
    if prior is None or prior.attention is None:
        return None
    path = cache_path(cfg, prior) if use_cache else None
    cache = str(path) if path is not None and path.exists() else None
    from ..align import PriorBuilder

    return PriorBuilder.from_spec(prior.spec(), tokenizer, cache=cache, truncation=True,
                                  max_length=cfg.model.max_length)


def enable_prior(model: Any, prior: PriorConfig | None) -> Any:
    if prior is None or prior.attention is None:
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
