"""The pipeline file's domain rules: what the types alone cannot say (metrics of a task,
one data source per split, sweep entries merged over the file's prior ...)."""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

from ..providers.spec import PriorSpecError
from .loader import ConfigError, _convert, _fail
from .schema import PipelineConfig, PriorConfig, TrainConfig


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
    if t.o_bias and t.type != "token-classification":
        raise fail("task.o_bias", f"shifts the tag O of token classification; {t.type} has none")
    if not math.isfinite(t.o_bias):
        raise fail("task.o_bias", f"must be a finite number, got {t.o_bias}")
    if t.dictionary_types is not None and t.type != "token-classification":
        raise fail("task.dictionary_types", f"types a dictionary's matches as entities of token classification, "
                                            f"not {t.type}; remove it")
    if t.dictionary_types is not None and not t.dictionary_types:
        raise fail("task.dictionary_types", "is empty; map at least one match group to an entity type, or leave "
                                            "it null (the data's entity types, when they are the dictionary's groups)")
    if t.decode != "argmax":
        if t.type != "token-classification":
            raise fail("task.decode", f"{t.decode} decoding is for token classification, not {t.type}")
        from ..decode.decoding import check_decoding
        from ..errors import PriorkitError

        try:
            check_decoding(t.decode, t.labels)
        except PriorkitError as exc:
            raise fail("task.decode", str(exc)) from None
    if cfg.model.max_length < 8:
        raise fail("model.max_length", f"must be at least 8, got {cfg.model.max_length}")
    for split in ("train", "eval", "test", "unlabeled"):
        src_cfg = getattr(cfg.data, split)
        if src_cfg is None:
            continue
        given = [k for k in ("source", "path") if getattr(src_cfg, k)]
        if len(given) != 1:
            raise fail(f"data.{split}",
                       "give exactly one of source (stsb, bc5cdr, or hf:ID[:CONFIG], a Hugging Face datasets id) "
                       f"or path (a file); got {', '.join(given) or 'none'}")
        if src_cfg.source is not None and src_cfg.source not in BUILTIN_SOURCES and not src_cfg.hf:
            raise fail(f"data.{split}.source",
                       f"unknown built-in corpus {src_cfg.source!r}; choose one of {', '.join(BUILTIN_SOURCES)}, "
                       "write hf:ID[:CONFIG] for a Hugging Face datasets id, or give path: FILE")
        for k in ("limit", "sample"):
            v = getattr(src_cfg, k)
            if v is not None and v <= 0:
                raise fail(f"data.{split}.{k}", f"must be a positive count, got {v}")
    if cfg.data.unlabeled is not None:
        from ..supervision.silver.checks import unlabeled_file_problem

        why = unlabeled_file_problem(cfg.data.unlabeled)
        if why:
            raise fail("data.unlabeled", why)
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
    for name in ("batch_size", "eval_batch_size", "gradient_accumulation", "logging_steps"):
        if getattr(tr, name) < 1:
            raise fail(f"train.{name}", f"must be at least 1, got {getattr(tr, name)}")
    if isinstance(tr.save, int) and tr.save < 1:
        raise fail("train.save", f"a checkpoint every N steps needs N >= 1, got {tr.save}")
    if tr.learning_rate <= 0:
        raise fail("train.learning_rate", f"must be positive, got {tr.learning_rate}")
    if tr.epochs <= 0 and tr.max_steps <= 0:
        raise fail("train.epochs", "must be positive (or set train.max_steps)")
    if tr.warmup < 0:
        raise fail("train.warmup", f"must not be negative, got {tr.warmup}")
    if tr.threads is not None and tr.threads < 1:
        raise fail("train.threads", f"must be at least 1, got {tr.threads}")
    if tr.report_to not in ("none", ["none"], []):
        from .trackers import problem

        why = problem(tr.report_to)
        if why:
            raise fail("train.report_to", why)
    ec = cfg.engine
    for name in ("workers", "batch_size"):
        if getattr(ec, name) is not None and getattr(ec, name) < 1:
            raise fail(f"engine.{name}", f"must be at least 1, got {getattr(ec, name)}")
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
    _check_controls(cfg, list(settings))
    _check_posthoc(cfg, list(settings))


def _check_posthoc(cfg: PipelineConfig, settings: list[str]) -> None:
    """``sweep.posthoc``: token classification, a name of its own, a trained base setting, a
    provider that is registered."""
    for name, arm in cfg.sweep.posthoc.items():
        path = ("sweep", "posthoc", name)

        def fail(sub: tuple, msg: str) -> ConfigError:
            return _fail(path + sub, cfg.locations, cfg.source, msg)

        if cfg.task.type != "token-classification":
            raise fail((), f"post-hoc arms merge predicted entity tags with dictionary matches: they need "
                            f"task.type token-classification, not {cfg.task.type}")
        if name in settings:
            raise fail((), f"{name!r} is also a setting of sweep.priors; give the post-hoc arm a name of its own")
        if arm.of not in settings:
            raise fail(("of",), f"{arm.of!r} is not a setting of sweep.priors ({', '.join(settings)}); `of` names "
                                "the trained setting whose predictions are merged")
        if arm.types is not None and not arm.types:
            raise fail(("types",), "is empty; map at least one match group to an entity type (or null for "
                                   "task.dictionary_types)")
        for i, other in enumerate(arm.mix):
            if other not in settings or other == arm.of:
                raise fail(("mix", str(i)), f"{other!r} is not a setting of sweep.priors other than `of` "
                                            f"({', '.join(settings)}); `mix` names the settings whose models are mixed in")
        if arm.mix and not cfg.train.keep_model:
            raise fail(("mix",), "mixes the runs' saved models: set train.keep_model: true")
        if arm.weights is not None and len(arm.weights) != 1 + len(arm.mix):
            raise fail(("weights",), f"{len(arm.weights)} weights for {1 + len(arm.mix)} models (`of` first, then `mix`)")
        if arm.weights is not None and (any(w < 0 for w in arm.weights) or sum(arm.weights) <= 0):
            raise fail(("weights",), f"must be non-negative with a positive sum, got {arm.weights}")
        if arm.o_bias is not None and not math.isfinite(arm.o_bias):
            raise fail(("o_bias",), f"must be a finite number, got {arm.o_bias}")
        if not arm.mix and (arm.weights is not None or arm.decode is not None or arm.o_bias is not None):
            raise fail(("mix",), "is empty, so weights, decode and o_bias do nothing; name the settings to mix in")
        if arm.document is not None and (isinstance(arm.document, bool) or arm.document < -1):
            raise fail(("document",), f"must be a number of sentences >= 0 (-1: to the end of the split), "
                                      f"or null for off; got {arm.document!r}")
        if arm.document is not None and arm.calibrate is not None:
            raise fail(("document",), "the document pass reads the dictionary as it is; it cannot follow a "
                                      "calibration (calibrate): drop one of the two")
        from ..providers.plugins import list_providers

        known = [e.name for e in list_providers()]
        if arm.provider not in known:
            raise fail(("provider",), f"unknown provider {arm.provider!r}; registered: {', '.join(known)}")


def _check_controls(cfg: PipelineConfig, settings: list[str]) -> None:
    """``sweep.controls``: setting -> control, both settings of the sweep, neither the baseline."""
    sw = cfg.sweep
    for setting, control in sw.controls.items():
        path = ("sweep", "controls", setting)

        def fail(msg: str) -> ConfigError:
            return _fail(path, cfg.locations, cfg.source, msg)

        for name in (setting, control):
            if name not in settings:
                raise fail(f"{name!r} is not a setting of sweep.priors ({', '.join(settings)}); "
                           "controls maps a prior setting to its control setting")
        if setting == control:
            raise fail(f"{setting!r} is its own control; name a knowledge-free twin of it "
                       "(e.g. a shuffled prior or random-spans features)")
        if setting == sw.baseline:
            raise fail(f"{setting!r} is the baseline (sweep.baseline), which every setting is already "
                       "compared with; use a prior setting as the key")
        if control == sw.baseline:
            raise fail(f"the control of {setting!r} is the baseline {control!r}, which it is already compared "
                       "with; name a knowledge-free twin of the prior (e.g. a shuffled prior)")


BUILTIN_SOURCES = ("stsb", "bc5cdr")


def _per_fraction_entry(cfg: PipelineConfig, fraction: float) -> dict[str, Any]:
    for key, update in cfg.sweep.per_fraction.items():
        if abs(float(key) - fraction) < 1e-9:
            return dict(update)
    return {}


def _check_prior(p: PriorConfig, path: tuple, cfg: PipelineConfig) -> None:
    loc, src = cfg.locations, cfg.source
    if cfg.task.type == "token-classification":  # single sentences: PriorSpec says what takes them
        try:
            p.check_single_texts()
        except PriorSpecError as exc:
            raise _fail(path + (exc.field,), loc, src, str(exc)) from None
    _check_provider_params(p, path, cfg)
    from ..channels.features.checks import config_problems

    for field, msg in config_problems(p, cfg.task.type)[:1]:
        raise _fail(path + field, loc, src, msg)
    from ..supervision.silver.checks import config_problems as silver_problems

    for field, msg in silver_problems(p, cfg.task.type, cfg.task.labels, cfg.task.dictionary_types)[:1]:
        raise _fail(path + field, loc, src, msg)
    if p.silver is not None and p.silver.teacher is not None and p.silver.teacher.prior is not None:
        teacher_prior(p, path, cfg)  # stops with the teacher setting's file:line when it is not usable
    if p.silver is not None and p.silver.teacher is not None and p.silver.teacher.train:
        _convert({**dataclasses.asdict(cfg.train), **p.silver.teacher.train}, TrainConfig,
                 path + ("silver", "teacher", "train"), loc, src)  # the teacher's own train fields
    if p.calibrate is not None:
        if cfg.task.type != "token-classification":
            raise _fail(path + ("calibrate",), loc, src, "calibrating a dictionary needs task.type "
                        f"token-classification (gold entities), not {cfg.task.type}")
        for field, msg in p.calibrate.problems()[:1]:
            raise _fail(path + ("calibrate", field), loc, src, msg)
        if p.features is None and p.silver is None:
            raise _fail(path + ("calibrate",), loc, src, "calibrates the matches of token features or silver "
                        "labels, and this setting has neither; set prior.features or prior.silver, or drop it")

    if p.channels:
        from ..channels.base import CHANNELS, listed_channels, unknown_channels

        for name in unknown_channels(p)[:1]:
            own = [n for n in CHANNELS if n not in listed_channels(p)]
            raise _fail(path + ("channels", name), loc, src, f"is not a registered channel (known: "
                        f"{', '.join(listed_channels(p)) or 'none'}); a channel comes from your code "
                        "(priorkit.channels.register_channel) or a plug-in (register_channels)"
                        f"{'; ' + ' and '.join(own) + ' have sections of their own' if own else ''}")
        for name, section in list(p.channels.items()):  # each section as its channel's declared config
            config = CHANNELS[name].config
            if config is not None and section is not None:
                where = path + ("channels", name)
                typed = _convert(dataclasses.asdict(section) if dataclasses.is_dataclass(section) else section,
                                 config, where, loc, src)
                for field, msg in (typed.problems() if hasattr(typed, "problems") else [])[:1]:
                    raise _fail(where + tuple(field.split(".")), loc, src, msg)
                p.channels[name] = typed
    layers = p.attention.layers if p.attention is not None else "all"
    if layers != "all" and (not layers or any(i < 0 for i in layers)):
        raise _fail(path + ("attention", "layers"), loc, src,
                    f"expected non-negative layer indices or 'all', got {layers!r}")
    if p.train:
        if "fraction" in p.train or "seed" in p.train:
            raise _fail(path + ("train",), loc, src, "fraction and seed are set by the run or sweep, not per prior")
        _convert({**dataclasses.asdict(cfg.train), **p.train}, TrainConfig, path + ("train",), loc, src)
    if p.attention is None:  # token features only (checked above)
        return
    mode = _attention_mode(p, path, cfg)
    lr = p.attention.learning_rate
    if lr is not None and (mode.learnable is None or lr <= 0):
        from ..attention.mode import all_modes

        learnable = " or ".join(name for name, m in all_modes().items() if m.learnable)
        raise _fail(path + ("attention", "learning_rate"), loc, src,
                    "is the learnable prior parameters' own learning rate: give a positive number with "
                    f"mode: {learnable} (got {lr!r} with mode: {p.attention.mode})")


def _attention_mode(p: PriorConfig, path: tuple, cfg: PipelineConfig) -> Any:
    """The registered mode of ``attention.mode``, its options checked by the mode itself."""
    from ..attention import PriorAttentionConfigError
    from ..attention.mode import all_modes, find_mode  # the registry, plug-ins' modes included (imports torch)

    loc, src = cfg.locations, cfg.source
    mode = find_mode(p.attention.mode)
    if mode is None:
        raise _fail(path + ("attention", "mode"), loc, src,
                    f"unknown attention mode {p.attention.mode!r}; choose one of {', '.join(all_modes())} "
                    "(a plug-in adds modes through register_attention_modes)")
    try:
        mode.settle(p.attention.options)
    except PriorAttentionConfigError as exc:
        raise _fail(path + ("attention", "options"), loc, src, str(exc)) from None
    return mode


def _check_provider_params(p: PriorConfig, path: tuple, cfg: PipelineConfig) -> None:
    """The provider's own parameter check (``PriorProvider.check_params``) and its need for a
    cache, by file and line, before anything is computed.  Unknown providers are left to
    the step that builds them."""
    from ..errors import PriorkitError
    from ..providers.plugins import list_providers

    entry = next((e for e in list_providers() if e.name == p.provider), None)
    if entry is None:
        return
    check = getattr(entry.factory, "check_params", None)
    if check is not None:
        try:
            check(dict(p.params))
        except PriorkitError as exc:
            raise _fail(path + ("params",), cfg.locations, cfg.source, str(exc)) from None
    if getattr(entry.factory, "needs_cache", False) and p.cache is None:
        raise _fail(path + ("cache",), cfg.locations, cfg.source,
                    f"provider {p.provider!r} gives a pair one value only through a cache; "
                    "use cache: auto (or a path)")


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


def teacher_prior(p: PriorConfig, path: tuple, cfg: PipelineConfig) -> PriorConfig | None:
    """The setting a self-training run's own teacher trains with: ``p`` without silver labels,
    with ``silver.teacher.prior``'s fields replaced; calibration goes with the features (none
    without them); None when no channel is left (a model without knowledge)."""
    from ..channels.features.checks import gives_nothing

    override = p.silver.teacher.prior if p.silver is not None and p.silver.teacher is not None else None
    if not override:
        same = dataclasses.replace(p, silver=None)
        return None if gives_nothing(same) else same  # no channel left: the gold alone, no knowledge

    merged = _deep_merge({**dataclasses.asdict(p), "silver": None}, override)
    if merged.get("features") is None:
        merged["calibrate"] = None
    where = path + ("silver", "teacher", "prior")
    pc = _convert(merged, PriorConfig, where, cfg.locations, cfg.source)
    if gives_nothing(pc):
        return None
    _check_prior(pc, where, cfg)
    return pc


def prior_settings(cfg: PipelineConfig) -> dict[str, PriorConfig | None]:
    """The sweep's prior settings, each resolved to a full :class:`PriorConfig`."""
    return resolve_sweep_priors(cfg)


def for_fraction(cfg: PipelineConfig, fraction: float, prior: PriorConfig | None = None) -> PipelineConfig:
    """``cfg`` with ``sweep.per_fraction``'s train fields for ``fraction`` applied, then the
    prior setting's own ``train`` fields."""
    update = {**_per_fraction_entry(cfg, fraction), **(prior.train if prior is not None else {})}
    if not update:
        return cfg
    train = _convert({**dataclasses.asdict(cfg.train), **update}, TrainConfig, ("train",), cfg.locations, cfg.source)
    return dataclasses.replace(cfg, train=train)


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
        from ..supervision.silver.config import NAMED_SETTINGS

        if isinstance(entry, str) and entry in NAMED_SETTINGS:  # e.g. self-training-no-knowledge
            entry = copy.deepcopy(NAMED_SETTINGS[entry])
        if not isinstance(entry, dict):
            raise _fail(path, cfg.locations, cfg.source,
                        "expected null (no prior), {} (the file's prior), a mapping of prior fields or a "
                        f"named setting ({', '.join(NAMED_SETTINGS)})")
        if base is None and not entry:
            raise _fail(path, cfg.locations, cfg.source,
                        "{} means 'the file's prior' but the file has no `prior` section")
        merged = _deep_merge(base or {}, entry)
        merged["name"] = entry.get("name") or name
        pc = _convert(merged, PriorConfig, path, cfg.locations, cfg.source)
        _check_prior(pc, path, cfg)
        out[name] = pc
    return out
