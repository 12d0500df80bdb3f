"""Judging a prior on its own: agreement with human word-similarity ratings.

::

    from priorkit.providers.prior_eval import read_word_pairs, evaluate
    pairs = read_word_pairs("wordsim353")           # or any word1<TAB>word2<TAB>score file
    result = evaluate(priorkit.get_provider("wordnet", measure="wup"), pairs)
    result.spearman, result.coverage, result.pairs_per_s

A provider may not know some words (NaN).  Two correlations are reported:

- ``spearman`` / ``pearson``: over the pairs the provider covers -- how good
  its knowledge is where it has some (read it together with ``coverage``);
- ``spearman_full``: over all pairs, with unknown pairs given a neutral value
  -- by default the median of the provider's own values on that benchmark, a
  guess that neither rewards nor punishes ignorance in rank terms (0 would
  rank every unknown pair as "unrelated").  ``neutral=0.0`` etc. overrides it.

Throughput (``pairs_per_s``) is measured after the provider has loaded, with
all pairs in one ``pair_similarity`` call (the provider's batched pair path) --
the way a precompute batches them.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import DataFormatError, PriorkitError, ResourceError
from .base import PriorProvider

#: benchmark names -> (resource, file) of the offline data (see docs/data.md)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "wordsim353": ("wordsim", "wordsim353.tsv"),
    "simlex999": ("wordsim", "simlex999.txt"),
}
_ALIASES = {
    "ws353": "wordsim353", "wordsim": "wordsim353", "wordsim-353": "wordsim353", "ws-353": "wordsim353",
    "simlex": "simlex999", "simlex-999": "simlex999", "sl999": "simlex999",
}
#: header names that identify the score column (lower-cased, compared after stripping)
_SCORE_HEADERS = ("score", "similarity", "sim", "simlex999", "human", "human (mean)", "mean",
                  "gold", "rating", "relatedness")
_COMMENT = ("#", "//", "%")


@dataclasses.dataclass
class WordPairs:
    """A word-pair benchmark: ``gold[i]`` is the human score of ``(left[i], right[i])``."""

    name: str
    path: Path
    left: list[str]
    right: list[str]
    gold: np.ndarray          # (P,) float64

    def __len__(self) -> int:
        return len(self.left)


@dataclasses.dataclass
class EvalResult:
    """One provider on one benchmark."""

    provider: str
    benchmark: str
    pairs: int
    covered: int
    coverage: float
    spearman: float
    pearson: float
    spearman_full: float
    neutral: float
    seconds: float
    pairs_per_s: float
    load_seconds: float
    fingerprint: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in dataclasses.asdict(self).items()}


# ---- reading benchmarks -----------------------------------------------------
def benchmark_path(benchmark: str | Path) -> Path:
    """A benchmark file: an existing path, or a known name (``wordsim353``, ``simlex999``)."""
    path = Path(benchmark).expanduser()
    if path.exists():
        return path
    key = _ALIASES.get(str(benchmark).lower(), str(benchmark).lower())
    if key in BENCHMARKS:
        from ..resources import resource_path

        return resource_path(*BENCHMARKS[key])
    raise ResourceError(
        f"benchmark {str(benchmark)!r} is neither a file nor a known name "
        f"({', '.join(BENCHMARKS)}); pass a word1<TAB>word2<TAB>score file"
    )


def _split(line: str) -> list[str]:
    if "\t" in line:
        return [f.strip() for f in line.split("\t")]
    if "," in line:
        return [f.strip() for f in next(csv.reader(io.StringIO(line)))]
    return line.split()


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_word_pairs(benchmark: str | Path, *, name: str | None = None) -> WordPairs:
    """Read a word-pair similarity file (tab, comma or space separated).

    Comment lines (``#``, ``//``, ``%``) and blank lines are skipped.  The
    score is the third field unless a header line names another column
    (``SimLex999``, ``score``, ``similarity``...).  A header is recognised
    only before the first data line; a later line without a number where the
    score belongs is an error naming the file and line.
    """
    path = benchmark_path(benchmark)
    left: list[str] = []
    right: list[str] = []
    gold: list[float] = []
    score_col = 2
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"{path}: not UTF-8 text ({exc})") from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(_COMMENT):
            continue
        fields = _split(line)
        if not gold and len(fields) >= 3 and all(_number(f) is None for f in fields[2:]):
            named = [i for i, f in enumerate(fields) if f.lower() in _SCORE_HEADERS and i >= 2]
            if named:
                score_col = named[0]
            continue  # a header line
        if len(fields) <= score_col:
            raise DataFormatError(
                f"{path}, line {lineno}: expected word1, word2 and a score "
                f"(column {score_col + 1}), found {len(fields)} field(s): {line[:80]!r}"
            )
        score = _number(fields[score_col])
        if score is None:
            raise DataFormatError(
                f"{path}, line {lineno}: score {fields[score_col]!r} (column {score_col + 1}) is not a number"
            )
        if not fields[0] or not fields[1]:
            raise DataFormatError(f"{path}, line {lineno}: an empty word in {line[:80]!r}")
        left.append(fields[0])
        right.append(fields[1])
        gold.append(score)
    if not gold:
        raise DataFormatError(f"{path} holds no word pairs (expected lines word1<TAB>word2<TAB>score)")
    label = name or _default_name(path)
    return WordPairs(label, path, left, right, np.asarray(gold, dtype=np.float64))


def _default_name(path: Path) -> str:
    for key, (_, filename) in BENCHMARKS.items():
        if path.name == filename:
            return key
    return path.stem


# ---- scoring ----------------------------------------------------------------
def pair_values(provider: PriorProvider, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
    """Similarity of each pair ``(left[i], right[i])`` -> (P,) float32 (NaN = unknown).

    One element-wise ``pair_similarity`` call: the provider's batched pair path
    (the embedding provider encodes every distinct word once, in batches).
    """
    if len(left) != len(right):
        raise ValueError(f"pair_values: {len(left)} left words but {len(right)} right words")
    if not len(left):
        return np.zeros(0, dtype=np.float32)
    return provider.pair_similarity(list(left), list(right))


def correlations(values: np.ndarray, gold: np.ndarray, neutral: float | str = "median") -> dict[str, float]:
    """Spearman/Pearson over covered pairs, Spearman over all pairs (unknown -> neutral)."""
    from scipy.stats import pearsonr, spearmanr

    values = np.asarray(values, dtype=np.float64)
    known = ~np.isnan(values)
    n = int(known.sum())
    nan = float("nan")
    rho = r = nan
    if n >= 3 and np.ptp(values[known]) > 0 and np.ptp(gold[known]) > 0:
        rho = float(spearmanr(values[known], gold[known]).statistic)
        r = float(pearsonr(values[known], gold[known]).statistic)
    if neutral == "median":
        fill = float(np.median(values[known])) if n else 0.0
    else:
        fill = float(neutral)
    full = np.where(known, values, fill)
    rho_full = float(spearmanr(full, gold).statistic) if np.ptp(full) > 0 else nan
    return {"spearman": rho, "pearson": r, "spearman_full": rho_full, "neutral": fill,
            "covered": n, "coverage": n / len(values) if len(values) else nan}


def timed_values(provider: PriorProvider, pairs: WordPairs) -> tuple[np.ndarray, float, float]:
    """(values (P,), seconds for the pairs, seconds to load): the raw material of a result."""
    t0 = time.perf_counter()
    provider.ensure_loaded()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    values = pair_values(provider, pairs.left, pairs.right)
    return values, time.perf_counter() - t0, load_s


def result_from_values(values: np.ndarray, pairs: WordPairs, *, label: str, seconds: float = float("nan"),
                       load_seconds: float = float("nan"), fingerprint: str = "",
                       neutral: float | str = "median") -> EvalResult:
    """An :class:`EvalResult` from pair values computed elsewhere (e.g. a combination search)."""
    stats = correlations(values, pairs.gold, neutral)
    return EvalResult(
        provider=label,
        benchmark=pairs.name,
        pairs=len(pairs),
        covered=stats["covered"],
        coverage=stats["coverage"],
        spearman=stats["spearman"],
        pearson=stats["pearson"],
        spearman_full=stats["spearman_full"],
        neutral=stats["neutral"],
        seconds=seconds,
        pairs_per_s=len(pairs) / seconds if seconds > 0 else float("nan"),
        load_seconds=load_seconds,
        fingerprint=fingerprint,
    )


def evaluate(provider: PriorProvider, pairs: WordPairs | str | Path, *, label: str | None = None,
             neutral: float | str = "median") -> EvalResult:
    """Score one provider on one benchmark (loads the provider first, timed separately)."""
    if not isinstance(pairs, WordPairs):
        pairs = read_word_pairs(pairs)
    values, seconds, load_s = timed_values(provider, pairs)
    return result_from_values(values, pairs, label=label or provider.name, seconds=seconds,
                              load_seconds=load_s, fingerprint=provider.fingerprint, neutral=neutral)


def evaluate_many(providers: Mapping[str, PriorProvider], benchmarks: Iterable[WordPairs | str | Path],
                  *, neutral: float | str = "median", progress=None) -> list[EvalResult]:
    """Every provider on every benchmark; ``progress(label, benchmark)`` is called before each."""
    sets = [b if isinstance(b, WordPairs) else read_word_pairs(b) for b in benchmarks]
    results = []
    for label, provider in providers.items():
        for pairs in sets:
            if progress is not None:
                progress(label, pairs.name)
            results.append(evaluate(provider, pairs, label=label, neutral=neutral))
    return results


# ---- provider arguments -----------------------------------------------------
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    if depth != 0 or quote:
        raise PriorkitError(f"provider argument {text!r} has unbalanced brackets or quotes")
    return parts


def parse_provider_arg(arg: str) -> tuple[str, dict[str, Any]]:
    """``"wordnet:measure=wup"`` -> ``("wordnet", {"measure": "wup"})``.

    Values are JSON when they parse as JSON (numbers, true/false, null,
    lists, dicts), strings otherwise; commas inside brackets or quotes do not
    split, so ``combine:providers=["embedding","wordnet"],how=max`` works.
    """
    name, _, rest = arg.strip().partition(":")
    name = name.strip()
    if not name:
        raise PriorkitError(f"provider argument {arg!r} has no provider name (NAME[:key=value,...])")
    params: dict[str, Any] = {}
    if rest.strip():
        for item in _split_top_level(rest):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not _KEY.match(key):
                raise PriorkitError(
                    f"provider argument {arg!r}: {item.strip()!r} is not key=value (NAME[:key=value,...])"
                )
            value = value.strip()
            try:
                params[key] = json.loads(value)
            except json.JSONDecodeError:
                params[key] = value
    return name, params


def provider_from_arg(arg: str) -> PriorProvider:
    from .plugins import get_provider

    name, params = parse_provider_arg(arg)
    return get_provider(name, **params)


# ---- presenting ---------------------------------------------------------------
def _fmt(value: float, digits: int = 3) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def results_rows(results: Sequence[EvalResult]) -> tuple[list[str], list[str], dict[str, dict[str, EvalResult]]]:
    providers = list(dict.fromkeys(r.provider for r in results))
    benches = list(dict.fromkeys(r.benchmark for r in results))
    grid: dict[str, dict[str, EvalResult]] = {p: {} for p in providers}
    for r in results:
        grid[r.provider][r.benchmark] = r
    return providers, benches, grid


_CELLS = (("Spearman", lambda r: _fmt(r.spearman)), ("full", lambda r: _fmt(r.spearman_full)),
          ("Pearson", lambda r: _fmt(r.pearson)), ("coverage", lambda r: _fmt(r.coverage, 3)),
          ("pairs/s", lambda r: "-" if math.isnan(r.pairs_per_s) else f"{r.pairs_per_s:,.0f}"))


def results_table(results: Sequence[EvalResult]) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of the printed table: one row per benchmark and provider, the benchmark
    named on its first row (``priorkit.output.print_table`` prints it)."""
    providers, benches, grid = results_rows(results)
    rows = []
    for b in benches:
        for i, p in enumerate(q for q in providers if b in grid[q]):
            r = grid[p][b]
            rows.append([b if i == 0 else "", p, str(r.pairs), *[fn(r) for _, fn in _CELLS]])
    return ["benchmark", "provider", "pairs", *[cell for cell, _ in _CELLS]], rows


def results_markdown(results: Sequence[EvalResult]) -> str:
    """The same table as Markdown (for docs)."""
    providers, benches, grid = results_rows(results)
    head = ["provider"] + [f"{b} {cell}" for b in benches for cell, _ in _CELLS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in providers:
        row = [f"`{p}`"]
        for b in benches:
            r = grid[p].get(b)
            row += [fn(r) if r else "" for _, fn in _CELLS]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)
