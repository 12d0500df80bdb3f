"""A trained model with its prior, ready to predict: :func:`load_model` and :class:`Predictor`.

``priorkit.load_model(folder)`` takes a model folder, a run folder (its
``model/``) or a pipeline's output folder holding one run, and gives back the
fine-tuned model with every channel ``priorkit.json`` names restored and attached
(docs/channels.md): prior attention switched on again with its saved settings and
learnt gates, and the :class:`~priorkit.PriorBuilder` that makes the same priors as
in training (built from the stored :class:`~priorkit.providers.spec.PriorSpec`); the token
features with their weights from ``model.safetensors``.
"""
from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..channels.base import PredictionWarning
from ..decode.decoding import check_decoding, check_o_bias, decode_tags, first_subtokens
from ..decode.spans import entity_dicts
from ..decode.steps import Decode
from ..errors import PriorkitError
from ..task_types import AUTO_CLASSES
from . import manifest as mf
from .tagger import Tagging


# ---------------------------------------------------------------------------
# finding and checking the folder
# ---------------------------------------------------------------------------
def resolve_folder(path: str | Path) -> Path:
    """A model folder, run folder or pipeline output folder (one run) -> the model folder,
    checked; one-line errors name the missing file (or the runs to choose from)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise PriorkitError(f"{path} does not exist; pass a run folder (runs/NAME/PRIOR/fracF/seedS), "
                            "its model/ folder or a pipeline's output folder")
    if not path.is_dir():
        raise PriorkitError(f"{path} is a file; pass a run folder or a model folder")
    if not (path / "config.json").exists() and not (path / "model").exists() and not (path / "run.json").exists():
        path = _the_one_run(path)
    if (path / "model").is_dir() and not (path / "config.json").exists():
        path = path / "model"
    elif (path / "run.json").exists() and not (path / "model").exists():
        raise PriorkitError(f"{path / 'model'} is missing: the run has not finished training "
                            "(or ran with train.keep_model: false); run `priorkit run` again")
    if not (path / "config.json").exists():
        raise PriorkitError(f"{path / 'config.json'} is missing: {path} is not a model folder "
                            "(a run folder holds it under model/)")
    if not any((path / w).exists() for w in mf.WEIGHTS):
        raise PriorkitError(f"{path / mf.WEIGHTS[0]} is missing: the folder has a config but no weights")
    if not any((path / t).exists() for t in mf.TOKENIZER):
        raise PriorkitError(f"{path / mf.TOKENIZER[0]} is missing: the folder has no (fast) tokenizer; "
                            "save it with tokenizer.save_pretrained(folder)")
    if not (path / mf.PRIORKIT_JSON).exists():
        raise PriorkitError(f"{path / mf.PRIORKIT_JSON} is missing: not a model folder written by priorkit "
                            "(for a plain transformers model use AutoModel... and PriorBuilder directly)")
    return path


def _the_one_run(output: Path) -> Path:
    """The run folder (PRIOR/fracF/seedS) of a pipeline's output folder that holds one; an
    error listing them when it holds several.  Not an output folder: ``output`` unchanged."""
    runs = sorted(p.parent for p in output.glob("*/frac*/seed*/run.json"))
    if not runs:
        return output
    trained = [r for r in runs if (r / "model" / "config.json").exists()] or runs
    if len(trained) == 1:
        return trained[0]
    names = ", ".join(str(r.relative_to(output)) for r in trained)
    raise PriorkitError(f"{output} holds {len(trained)} runs ({names}); pass one of them, "
                        f"e.g. {trained[0]}")


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "unexpected keys prior_gate" chatter: enable_prior_attention restores those tensors."""
    from transformers.utils import logging as hf_logging

    before, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(before)
        if bars:
            hf_logging.enable_progress_bar()


def load_model(path: str | Path, *, device: str | None = None, use_cache: bool = True,
               max_length: int | None = None, decode: str | None = None,
               o_bias: float | None = None) -> "Predictor":
    """Load a priorkit model folder (or run folder) with its prior on; see :class:`Predictor`.

    ``use_cache``: read word pairs from the cache the run used (read-only; words it
    lacks are computed, nothing is written; an unreadable or locked cache is skipped
    with a warning).  ``max_length``: tokens per input (default: the training max length).
    ``decode``: NER only, ``argmax`` or ``viterbi`` (default: the run's ``task.decode``,
    recorded in priorkit.json; ``argmax`` for models saved before it); ``o_bias``: NER, added
    to each word's log-probability of ``O`` (default: the run's ``task.o_bias``, else 0).
    """
    model_dir = resolve_folder(path)
    return load_folder(model_dir, mf.read_info(model_dir), device=device, use_cache=use_cache,
                       max_length=max_length, decode=decode, o_bias=o_bias)


def load_folder(model_dir: Path, info: dict, *, device: str | None = None, use_cache: bool = True,
                max_length: int | None = None, decode: str | None = None,
                o_bias: float | None = None) -> "Predictor":
    """:func:`load_model` of a checked model folder with its ``priorkit.json`` content ``info``
    already read (a recipe hands its members' here with the dictionary's files in place)."""
    import transformers
    from transformers import AutoTokenizer

    from ..align import load_tokenizer

    task = info["task"]
    if task["type"] not in AUTO_CLASSES:
        raise PriorkitError(f"{model_dir / mf.PRIORKIT_JSON}: unknown task type {task['type']!r}; "
                            f"this priorkit knows {', '.join(AUTO_CLASSES)}")
    from .plugins_needed import check_plugins

    check_plugins(info, model_dir / mf.PRIORKIT_JSON)  # a plug-in the model needs: named, with its source
    auto = getattr(transformers, AUTO_CLASSES[task["type"]])
    with _quiet_loading():
        model = auto.from_pretrained(str(model_dir))
        tokenizer = load_tokenizer(AutoTokenizer.from_pretrained(str(model_dir)))
    ml = _max_length(max_length, info.get("max_length"), tokenizer, model)
    from ..channels import Context, restore_channels

    channels = restore_channels(info.get("channels") or {}, Context(
        tokenizer, ml, folder=model_dir, prior=info.get("prior"), use_cache=use_cache), where=model_dir / mf.PRIORKIT_JSON)
    for channel in channels:
        channel.attach(model)
        channel.load_state(model, model_dir)
    predictor = Predictor(model, tokenizer, channels, task_type=task["type"], labels=task.get("labels"),
                          label_scale=float(task.get("label_scale") or 1.0), inputs=info.get("inputs") or "pairs",
                          max_length=ml, info=info, folder=model_dir, device=device)
    predictor.decode = decode or task.get("decode") or "argmax"
    predictor.o_bias = float(task.get("o_bias") or 0.0) if o_bias is None else o_bias
    return predictor


def _max_length(asked: int | None, trained: int | None, tokenizer: Any, model: Any) -> int:
    limit = getattr(model.config, "max_position_embeddings", None) or 512
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if tok_limit is not None and tok_limit < 1_000_000:
        limit = min(limit, int(tok_limit))
    if asked is not None:
        if asked < 8:
            raise PriorkitError(f"--max-length {asked} is too small; give at least 8 tokens")
        if asked > limit:
            raise PriorkitError(f"--max-length {asked} is more than the model takes ({limit} tokens)")
        return int(asked)
    return int(min(trained or limit, limit))


# ---------------------------------------------------------------------------
# the predictor
# ---------------------------------------------------------------------------
class Predictor(Tagging):
    """A fine-tuned model, its tokenizer and prior builder; ``predict`` gives plain records.

    * sentence-pair regression: ``{"score": float}`` on the labels' own scale
      (the model learnt ``label / label_scale``; this undoes it);
    * classification: ``{"label": str, "probs": {label: p}}``;
    * NER: ``{"tags": [...], "entities": [{"type", "start", "end", "text"}]}``
      (one tag per input word; ``end`` is exclusive).

    Inputs: ``(text_a, text_b)`` tuples for a pair model, strings for a single-text
    model, word lists (or whitespace-split strings) for NER; dicts with
    ``text_a``/``text_b`` or ``words`` work too.
    """

    def __init__(self, model: Any, tokenizer: Any, channels: Sequence[Any] | None, *, task_type: str,
                 labels: list | None, label_scale: float, inputs: str, max_length: int, info: dict, folder: Path,
                 device: str | None = None) -> None:
        import torch

        self.model, self.tokenizer = model, tokenizer
        self.channels = list(channels or ())  # restored and attached (docs/channels.md)
        self.task_type, self.labels, self.label_scale = task_type, labels, label_scale
        self.inputs, self.max_length, self.info, self.folder = inputs, max_length, info, folder
        self.device = torch.device(device) if device else next(model.parameters()).device
        self.model.to(self.device)
        self.model.eval()
        self.truncated: list[int] = []  # indices of the last call's inputs that were cut
        self._decode = "argmax"
        self._o_bias = 0.0

    @property
    def decode(self) -> str:
        """NER: how a word's tag is chosen, ``argmax`` or ``viterbi`` (:mod:`priorkit.decode.decoding`)."""
        return self._decode

    @decode.setter
    def decode(self, value: str) -> None:
        if value == "viterbi" and self.task_type != "token-classification":
            raise PriorkitError(f"viterbi decoding is for token classification; this model is {self.task_type}")
        check_decoding(value, self.labels)
        self._decode = value

    @property
    def o_bias(self) -> float:
        """NER: added to each word's log-probability of ``O`` before decoding (0: as trained)."""
        return self._o_bias

    @o_bias.setter
    def o_bias(self, value: float) -> None:
        value = float(value)
        if value and self.task_type != "token-classification":
            raise PriorkitError(f"o_bias shifts the tag O of an NER model; this {self.task_type} model has none")
        self._o_bias = check_o_bias(value, self.labels)

    # ---- documents (tagger.Tagging: tag_documents, model(text)) -------------------------------
    dictionary = None  # a plain model has no dictionary: its entities carry no concept IDs

    @property
    def steps(self) -> tuple:
        """NER: the one step after the model, its decoding (:mod:`priorkit.decode.steps`)."""
        return (Decode(self._decode, self._o_bias),)

    def _scorers(self) -> list[tuple["Predictor", list[int]]]:
        return [(self, list(range(len(self.labels or ()))))]

    def channel(self, name: str) -> Any:
        """The model's channel ``name`` (None: it has none)."""
        return next((c for c in self.channels if c.name == name), None)

    @property
    def builder(self) -> Any:
        """The attention channel's PriorBuilder (None: no prior attention, or switched off)."""
        att = self.channel("attention")
        return None if att is None else att.builder

    @builder.setter
    def builder(self, value: Any) -> None:  # None: predict without building priors
        att = self.channel("attention")
        if att is None:
            raise PriorkitError("this model has no attention channel to set a builder on")
        att.builder = value

    @property
    def features(self) -> Any:
        """The features channel's FeatureBuilder (None: no token features)."""
        feats = self.channel("features")
        return None if feats is None else feats.builder

    def __repr__(self) -> str:
        prior = self.info.get("prior") or {}
        return (f"<Predictor {self.task_type} {self.folder} prior={prior.get('provider', 'none')} "
                f"max_length={self.max_length}>")

    # ---- inputs -----------------------------------------------------------
    def examples(self, inputs: Iterable[Any]) -> list[dict]:
        """Normalise inputs to ``{"text_a", "text_b"}`` / ``{"words"}`` dicts, checking their kind."""
        one_pair = isinstance(inputs, tuple) and len(inputs) == 2 and all(isinstance(t, str) for t in inputs)
        if isinstance(inputs, (str, dict)) or one_pair:
            inputs = [inputs]
        out = []
        for i, item in enumerate(inputs):
            out.append(self._example(item, i))
        if self.inputs == "any" and out:
            kinds = {e.get("text_b") is None for e in out}
            if len(kinds) > 1:
                raise PriorkitError("the inputs mix single texts and sentence pairs; predict them separately")
        return out

    def _example(self, item: Any, i: int) -> dict:
        if hasattr(item, "to_dict"):  # Example / TaggedSentence
            item = item.to_dict()
        if self.inputs == "words":
            if isinstance(item, dict):
                if "words" in item:
                    item = item["words"]
                elif item.get("text_b") is not None:
                    raise PriorkitError(f"input {i} is a sentence pair; this NER model tags one sentence")
                else:  # a document record ({"id", "text"}) reads like its text
                    item = item.get("text_a", item.get("text"))
            if isinstance(item, str):
                item = item.split()
            if not isinstance(item, (list, tuple)) or not all(isinstance(w, str) for w in item):
                raise PriorkitError(f"input {i} is {type(item).__name__}; an NER model takes a list of words, "
                                    "a string (split on whitespace) or a dict with words or text "
                                    "(documents with offsets: model(text) or model.tag_documents(docs))")
            if not item:
                raise PriorkitError(f"input {i} holds no words")
            return {"words": list(item)}
        if isinstance(item, dict):
            a, b = item.get("text_a", item.get("text")), item.get("text_b")
        elif isinstance(item, str):
            a, b = item, None
        elif isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(t, str) for t in item):
            a, b = item
        else:
            raise PriorkitError(f"input {i} is {type(item).__name__} {str(item)[:60]!r}; pass "
                                + ("(text_a, text_b) tuples" if self.inputs == "pairs" else "strings"))
        if not isinstance(a, str):
            raise PriorkitError(f"input {i} has no text_a string")
        if self.inputs == "pairs" and b is None:
            raise PriorkitError(f"input {i} is a single text, but this model compares sentence pairs: "
                                "pass (text_a, text_b)")
        if self.inputs == "single" and b is not None:
            raise PriorkitError(f"input {i} is a sentence pair, but this model reads one text per input")
        return {"text_a": a, "text_b": b}

    # ---- model ------------------------------------------------------------
    def collator(self) -> Any:
        """The one collator (docs/channels.md): one tokenisation of a batch at the model's max
        length, then each channel's tensors (a channel switched off, e.g. ``builder = None``,
        adds none)."""
        from ..collator import PriorCollator

        return PriorCollator(self.tokenizer, channels=self.channels, truncation=True, max_length=self.max_length)

    def batches(self, examples: Sequence[dict], batch_size: int = 32, progress: bool = False
                ) -> Iterator[tuple[int, Any, np.ndarray]]:
        """(start index, encoding, logits as float32 NumPy) per batch, in input order."""
        import torch

        if batch_size < 1:
            raise PriorkitError(f"batch size must be at least 1, got {batch_size}")
        self.truncated = []
        collate = self.collator()
        starts = range(0, len(examples), batch_size)
        if progress:  # a bar on a terminal, a plain line every few seconds elsewhere (priorkit.output)
            from ..output import progress as with_progress

            starts = with_progress(starts, desc="predict", unit="batch")
        for start in starts:
            chunk = examples[start:start + batch_size]
            self._note_truncation(start, chunk)
            enc, inputs = collate.encode(chunk)
            batch = {k: v.to(self.device) for k, v in inputs.items()}
            with torch.no_grad():
                logits = self.model(**batch).logits.float().cpu().numpy()
            yield start, enc, logits

    def _note_truncation(self, start: int, chunk: Sequence[dict]) -> None:
        words = "words" in chunk[0]
        a = [e["words"] if words else e["text_a"] for e in chunk]
        b = None if words or chunk[0].get("text_b") is None else [e["text_b"] for e in chunk]
        lengths = [len(ids) for ids in self.tokenizer(a, b, is_split_into_words=words, truncation=False,
                                                 verbose=False)["input_ids"]]
        self.truncated += [start + i for i, n in enumerate(lengths) if n > self.max_length]

    def logits(self, inputs: Iterable[Any], batch_size: int = 32, progress: bool = False) -> list[np.ndarray]:
        """Raw outputs per input: (labels,) for sequence tasks, (tokens, labels) for NER (no padding)."""
        examples = self.examples(inputs)
        out: list[np.ndarray] = []
        for _, enc, logits in self.batches(examples, batch_size, progress):
            for j in range(len(logits)):
                if logits.ndim == 3:
                    n = int(enc["attention_mask"][j].sum())
                    out.append(logits[j, :n])
                else:
                    out.append(logits[j])
        self._warn_truncated(len(examples))
        return out

    def word_logits(self, inputs: Iterable[Any], batch_size: int = 32, progress: bool = False) -> list[np.ndarray]:
        """NER: each sentence's (words, labels) logits, one row per word (its first sub-token);
        words cut off by truncation have no row.  ``decoding.decode_tags`` turns a row block into tags."""
        if self.task_type != "token-classification":
            raise PriorkitError(f"word_logits is for token classification; this model is {self.task_type}")
        examples = self.examples(inputs)
        out: list[np.ndarray] = []
        for _, enc, logits in self.batches(examples, batch_size, progress):
            out += [logits[j][first_subtokens(enc.word_ids(j))] for j in range(len(logits))]
        self._warn_truncated(len(examples))
        return out

    def predict(self, inputs: Iterable[Any], batch_size: int = 32, progress: bool = False) -> list[dict]:
        """One record per input, in order (see the class docstring)."""
        examples = self.examples(inputs)
        records: list[dict] = []
        for start, enc, logits in self.batches(examples, batch_size, progress):
            for j in range(len(logits)):
                records.append(self._record(examples[start + j], enc, j, logits[j]))
        self._warn_truncated(len(examples))
        return records

    def _record(self, example: dict, enc: Any, j: int, logits: np.ndarray) -> dict:
        if self.task_type == "regression":
            return {"score": float(logits[0]) * self.label_scale}
        if self.task_type == "pair-classification":
            p = _softmax(logits)
            names = self.labels or [str(k) for k in range(len(p))]
            return {"label": names[int(p.argmax())], "probs": {n: float(v) for n, v in zip(names, p)}}
        words = example["words"]
        first = first_subtokens(enc.word_ids(j))  # a word cut off by truncation has none: O
        tags = decode_tags(logits[first], self.labels, self._decode, self._o_bias) + ["O"] * (len(words) - len(first))
        return {"tags": tags, "entities": entities(words, tags)}

    def attention(self, text_a: Any, text_b: str | None = None, *, layers: Any = None, heads: Any = None,
                  prior: bool = True, off: Any = ()) -> Any:
        """The attention weights of one input (:class:`~priorkit.inference.attention_view.AttentionMaps`):
        ``layers`` (default: those with the prior) and ``heads`` (default: all), on the batch the
        model's collator builds (every channel's tensors); ``off``: channel names switched off
        (``"all"``: the stock model), ``prior=False``: the attention prior off (docs/show.md)."""
        from .attention_view import attention_maps

        return attention_maps(self, text_a, text_b, layers=layers, heads=heads, prior=prior, off=off)

    def _warn_truncated(self, total: int) -> None:
        if not self.truncated:
            return
        first = ", ".join(str(i) for i in self.truncated[:5]) + (" ..." if len(self.truncated) > 5 else "")
        what = "their words past the limit are tagged O" if self.task_type == "token-classification" \
            else "only their first tokens were read"
        warnings.warn(f"{len(self.truncated)} of {total} inputs are longer than {self.max_length} tokens and "
                      f"were truncated ({what}); inputs {first}", PredictionWarning, stacklevel=3)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def entities(words: Sequence[str], tags: Sequence[str]) -> list[dict]:
    """Entity spans from BIO / BIOES tags: ``{"type", "start", "end" (exclusive), "text"}``.

    An ``I-`` tag after ``O`` or another type opens a span (as conlleval does; the one span
    reader, :func:`priorkit.decode.spans.entity_dicts`).
    """
    return entity_dicts(words, tags)


def records_table(records: Sequence[dict], examples: Sequence[dict]) -> tuple[list[str], list[list[Any]]]:
    """Header and rows for CSV/TSV: inputs, then the prediction (probs one column per label)."""
    rows: list[list[Any]] = []
    header: list[str] = []
    for e, r in zip(examples, records):
        row: dict[str, Any] = {}
        if "words" in e:
            row["words"] = " ".join(e["words"])
        else:
            row["text_a"] = e["text_a"]
            if e.get("text_b") is not None:
                row["text_b"] = e["text_b"]
        for k, v in r.items():
            if k == "probs":
                row.update({f"prob_{n}": p for n, p in v.items()})
            elif k == "tags":
                row["tags"] = " ".join(v)
            elif k == "entities":
                row["entities"] = json.dumps(v)
            else:
                row[k] = v
        if not header:
            header = list(row)
        rows.append([row.get(h) for h in header])
    return header, rows
