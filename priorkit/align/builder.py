"""Token-aligned prior matrices: from words to the tokens a model actually sees.

``PriorBuilder`` turns a sentence (or a pair) into an (L, L) matrix whose rows
and columns follow ``tokenizer(text_a, text_b)["input_ids"]`` exactly:

1. the raw text is cut into *words* (whitespace chunks; or the given words when
   the input is pre-split, as for NER);
2. each token is assigned to the word that contains its first character
   (fast-tokenizer offsets), special tokens get their own pseudo-words;
3. the provider may group words into phrases (``PriorProvider.segment``, e.g.
   "myocardial infarction"); phrase keys are compared with
   ``provider.similarity`` -- one call per sentence (pair), so a cache or a
   vectorised provider sees whole blocks;
4. word values are scattered to tokens with one fancy-indexing step: every
   word piece copies its word's row and column.

Layouts:

- ``paper``: Xia et al. (2021).  P starts as ones; only the cross-sentence
  blocks (side A incl. [CLS] and the first [SEP] against side B incl. the last
  [SEP], and the transpose) hold word similarities.  Pairs only.
- ``full``: every token pair, for single sentences and pairs; tokens inside
  one word or phrase get 1 with each other (``within="all"``), or only inside
  a phrase the provider knows, with the provider's value of the phrase with
  itself (``within="known"``, e.g. a concept mention); special tokens get
  ``neutral``.

Unknown values (NaN from the provider) become ``neutral`` (default 1.0, the
multiplicative no-op).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from ..errors import PriorkitError, TokenizerError
from ..providers.base import PriorProvider
from ..providers.spec import PriorSpec, check_layout
from .tokens import Alignment, _char_to_word, _index_keys, _Plan, load_tokenizer, tokenizer_fingerprint
from .words import WordKeys, _input_kind, _phrase_keys

if TYPE_CHECKING:
    import torch


class PriorBuilder(WordKeys):
    """Build token-aligned prior matrices for one tokenizer and one provider.

    :param tokenizer: a fast tokenizer, a local path or a Hub id.
    :param provider: a :class:`PriorProvider` or a registered provider name.
    :param layout: ``"paper"`` (sentence pairs, cross blocks only) or ``"full"``.
    :param cache: a :class:`priorkit.cache.PriorCache` or a path to one; word
        pairs are then read from it (and written when it is writable).
    :param neutral: value for unknown pairs and (``full``) special tokens.
    :param stop_words: keys whose similarity is forced to ``stop_value``
        (the paper's list in the preset); empty keys count as stop words then.
    :param keys: how a word becomes a key: ``"paper"`` (lower-case, remove all
        punctuation) or ``"strip"`` (lower-case, strip surrounding punctuation).
    :param within: ``full`` layout, the cells between tokens of one word or phrase:
        ``"all"`` (default) 1 for every word; ``"known"`` the provider's value of the
        phrase with itself, so only recognised phrases (concept mentions) stand out
        and other words' pieces get ``neutral`` (with ``neutral < 1``, too).
    :param tokenizer_kwargs: passed to every tokenizer call (``truncation``,
        ``max_length`` ...), so the prior matches the model input made with them.
    """

    def __init__(
        self,
        tokenizer: Any,
        provider: PriorProvider | str,
        layout: str = "full",
        cache: Any = None,
        neutral: float = 1.0,
        stop_words: Iterable[str] | None = None,
        stop_value: float = 0.0,
        keys: str = "strip",
        within: str = "all",
        **tokenizer_kwargs: Any,
    ) -> None:
        check_layout(layout, keys, within=within, neutral=neutral)  # the rules are PriorSpec's
        self.tokenizer = load_tokenizer(tokenizer)
        super().__init__(provider, layout=layout, stop_words=stop_words, stop_value=stop_value, keys=keys)
        self.cache = None
        if cache is not None:
            from ..cache import CachedProvider, PriorCache

            self.cache = cache if isinstance(cache, PriorCache) else PriorCache(cache, read_only=True)
            self.provider = CachedProvider(self.base_provider, self.cache)
        self.neutral = float(neutral)
        self.within = within
        self.tokenizer_kwargs = dict(tokenizer_kwargs)

    # ---- from a description -------------------------------------------
    @classmethod
    def from_spec(cls, spec: PriorSpec, tokenizer: Any, *, provider: PriorProvider | None = None,
                  cache: Any = None, **tokenizer_kwargs: Any) -> "PriorBuilder":
        """The builder ``spec`` describes, for ``tokenizer`` (an object, a path or a Hub id).

        :param provider: an already built provider (default: :meth:`PriorSpec.build_provider`).
        :param cache: a :class:`~priorkit.cache.PriorCache` or a path to one.
        :param tokenizer_kwargs: for every tokenizer call (``truncation``, ``max_length``).
        """
        return cls(tokenizer, provider or spec.build_provider(), cache=cache, **spec.builder_options(),
                   **tokenizer_kwargs)

    @classmethod
    def paper(cls, tokenizer: Any, provider: PriorProvider | None = None, cache: Any = None,
              **tokenizer_kwargs: Any) -> "PriorBuilder":
        """Xia et al. (2021), defined exactly (docs/alignment.md): ``PriorSpec(preset="paper")``.

        the model input is ``tokenizer(text_a, text_b)`` on the raw text; a word
        is a whitespace chunk; a token belongs to the chunk holding its first
        character; the key is the chunk lower-cased without
        ``string.punctuation``.  [CLS] and the first [SEP] are side A with keys
        ``cls`` and ``sep``; the last [SEP] is side B with key ``sep``.  An
        empty key is a stop word.  P starts as ones; for every token i of side
        A and j of side B, ``P[i, j] = P[j, i] = xia2021(key_i, key_j)``.
        """
        return cls.from_spec(PriorSpec(preset="paper"), tokenizer, provider=provider, cache=cache,
                             **tokenizer_kwargs)

    # ---- describing ---------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "neutral": self.neutral,
            "keys": self.key_name,
            **({"within": self.within} if self.within != "all" else {}),
            "stop_words": sorted(self.stop_words) if self.stop_words is not None else None,
            "stop_value": self.stop_value,
            "provider": self.base_provider.describe(),
            "tokenizer": tokenizer_fingerprint(self.tokenizer),
            "tokenizer_kwargs": self.tokenizer_kwargs,
        }

    # ---- alignment ----------------------------------------------------
    def encode(self, text_a, text_b=None, **kwargs: Any):
        """Tokenise exactly as ``build`` does (so shapes always agree)."""
        split = _input_kind(text_a, text_b)
        opts = {**self.tokenizer_kwargs, **kwargs}
        return self.tokenizer(text_a, text_b, is_split_into_words=split,
                              return_offsets_mapping=not split, **opts)

    def align(self, encoding, text_a, text_b=None, index: int = 0) -> Alignment:
        """Assign every token of ``encoding[index]`` to a word (see module doc).

        Vectorised: a per-text array maps every character to the whitespace
        word it starts (whitespace maps to the following word), so a token's
        word is one array lookup at its start offset.
        """
        enc = encoding.encodings[index] if getattr(encoding, "encodings", None) else None
        if enc is None:
            raise TokenizerError("the encoding carries no alignment data; use a fast tokenizer")
        split = not isinstance(text_a, str)
        sides = [text_a] if text_b is None else [text_a, text_b]
        side_keys = [self._side_keys(t) for t in sides]
        n_a = len(side_keys[0])
        keys: list[str] = [k for ks in side_keys for k in ks]
        n_words = len(keys)

        # phrases (spans) over each side's words -> span id per word
        word_span = np.empty(n_words, dtype=np.int64)
        span_keys: list[str] = []
        offset = 0
        for ks in side_keys:
            spans = self._spans(ks)
            for i, (start, end) in enumerate(spans):
                word_span[offset + start: offset + end] = len(span_keys) + i
            span_keys += _phrase_keys(ks, spans)
            offset += len(ks)

        L = len(enc.ids)
        seq = np.fromiter((-1 if s is None else s for s in enc.sequence_ids), np.int64, L)  # (L,)
        valid = np.fromiter(enc.attention_mask, np.int64, L).astype(bool)  # (L,)
        special = seq < 0
        token_word = np.full(L, -1, dtype=np.int64)
        if split:
            local = np.fromiter((-1 if w is None else w for w in enc.word_ids), np.int64, L)
        else:
            starts = np.fromiter((o[0] for o in enc.offsets), np.int64, L)
            local = np.full(L, -1, dtype=np.int64)
            for sid, text in enumerate(sides):
                sel = seq == sid
                if sel.any():
                    c2w = _char_to_word(text)  # (len(text) + 1,)
                    local[sel] = c2w[np.minimum(starts[sel], len(text))]
        words = (~special) & (local >= 0)
        token_word[words] = local[words] + np.where(seq[words] == 1, n_a, 0)
        token_side = np.where(seq > 0, 1, 0)

        # special tokens: pseudo-words "cls" (the first) and "sep"; side A until B starts
        special_at = np.flatnonzero(special & valid)
        b_start = np.flatnonzero(seq == 1)
        b_start = int(b_start[0]) if len(b_start) else L
        pseudo = {}
        for i, t in enumerate(special_at.tolist()):
            side = 1 if t > b_start else 0
            name = (side, "cls" if i == 0 and side == 0 else "sep")
            if name not in pseudo:
                pseudo[name] = n_words + len(pseudo)
            token_word[t] = pseudo[name]
            token_side[t] = side
        all_keys = keys + [name[1] for name in pseudo]
        token_span = np.full(L, -1, dtype=np.int64)
        token_span[words] = word_span[token_word[words]]
        return Alignment(all_keys, token_word, token_side, token_span, special, span_keys)

    # ---- building -----------------------------------------------------
    def build(self, text_a: str | Sequence[str], text_b: str | Sequence[str] | None = None) -> torch.Tensor:
        """(L, L) float32 prior for one example, L = len(tokenizer(text_a, text_b)["input_ids"])."""
        import torch  # here, not at the top: the word side imports without torch

        encoding = self.encode(text_a, text_b)
        return torch.from_numpy(self._matrix(self.align(encoding, text_a, text_b), text_b is not None))

    def build_batch(self, texts_a: Sequence, texts_b: Sequence | None = None, *,
                    pad_value: float = 0.0, return_tensors: str = "pt", **kwargs: Any):
        """Tokenise a batch (padded) and add ``prior`` of shape (B, L, L).

        Padded positions get ``pad_value`` (0, as the paper); they are masked
        out by the attention mask anyway.
        """
        for name, texts in (("texts_a", texts_a), ("texts_b", texts_b)):
            if texts is not None and (isinstance(texts, (str, bytes)) or not hasattr(texts, "__getitem__")):
                raise PriorkitError(
                    f"build_batch: {name} must be a list of texts (one per example), not "
                    f"{type(texts).__name__}; for one example use build(text_a, text_b)"
                )
        if texts_b is not None and len(texts_b) != len(texts_a):
            raise PriorkitError(f"texts_a has {len(texts_a)} items but texts_b has {len(texts_b)}")
        if len(texts_a) == 0:
            raise PriorkitError("build_batch got an empty batch")
        split = _input_kind(texts_a[0], None, "texts_a[0]")
        for i in range(len(texts_a)):
            b = None if texts_b is None else texts_b[i]
            if texts_b is not None and b is None:
                raise PriorkitError(f"build_batch: texts_b[{i}] is None; a batch is all pairs or all single "
                                    "texts (pass texts_b=None for single texts)")
            if _input_kind(texts_a[i], b, f"texts_a[{i}]", f"texts_b[{i}]") != split:
                raise PriorkitError(
                    f"build_batch: texts_a[{i}] is a {'word list' if not split else 'string'} but texts_a[0] "
                    f"is a {'word list' if split else 'string'}; one batch holds raw texts or word lists, not both"
                )
        opts = {"padding": True, **self.tokenizer_kwargs, **kwargs}
        encoding = self.tokenizer(list(texts_a), None if texts_b is None else list(texts_b),
                                  is_split_into_words=split, return_tensors=return_tensors, **opts)
        encoding["prior"] = self.priors(encoding, texts_a, texts_b, pad_value=pad_value)
        return encoding

    def priors(self, encoding: Any, texts_a: Sequence, texts_b: Sequence | None = None, *,
               pad_value: float = 0.0, rows: Sequence[int] | None = None):
        """(B, L, L) float32 priors aligned to a padded batch ``encoding`` that this builder's
        tokenizer made of ``texts_a`` (and ``texts_b``): what :meth:`build_batch` adds, for a
        tokenisation made elsewhere (the collator's).  ``rows``: only these examples (the others
        stay ``pad_value``)."""
        import torch

        B, L = encoding["input_ids"].shape
        rows = range(B) if rows is None else rows
        plans = [self._plan(self.align(encoding, texts_a[b], None if texts_b is None else texts_b[b], index=b),
                            texts_b is not None) for b in rows]
        words = self._word_matrices([(pl.left, pl.right) for pl in plans])  # one provider call
        prior = np.full((B, L, L), float(pad_value), dtype=np.float32)
        for b, plan, W in zip(rows, plans, words):
            m = self._fill(plan, W)
            valid = np.flatnonzero(encoding.encodings[b].attention_mask)
            if len(valid) == L:
                prior[b] = m
            else:
                prior[b][np.ix_(valid, valid)] = m[np.ix_(valid, valid)]
        return torch.from_numpy(prior)

    def _plan(self, al: Alignment, pair: bool) -> "_Plan":
        """Which unique keys an example compares, and where each token reads its value."""
        tw = al.token_word
        if self.layout == "paper":
            if not pair:
                raise PriorkitError("the 'paper' layout needs a sentence pair; use layout='full' for single sentences")
            a_tok = np.flatnonzero((tw >= 0) & (al.token_side == 0))
            b_tok = np.flatnonzero((tw >= 0) & (al.token_side == 1))
            rows, left = _index_keys(al.keys, tw[a_tok])  # token -> unique key row
            cols, right = _index_keys(al.keys, tw[b_tok])
            return _Plan(len(tw), left, right, a_tok, b_tok, rows, cols, None)
        word_tok = np.flatnonzero(al.token_span >= 0)
        spans = al.token_span[word_tok]  # (T,)
        idx, phrases = _index_keys(al.span_keys, spans)
        return _Plan(len(tw), phrases, phrases, word_tok, word_tok, idx, idx, spans)

    def _fill(self, plan: "_Plan", W: np.ndarray) -> np.ndarray:
        """Scatter word values (|left|, |right|) to the (L, L) token matrix."""
        L = plan.length
        if self.layout == "paper":
            P = np.ones((L, L), dtype=np.float32)
            block = W[np.ix_(plan.rows, plan.cols)]  # (|A|, |B|)
            P[np.ix_(plan.a_tok, plan.b_tok)] = block
            P[np.ix_(plan.b_tok, plan.a_tok)] = block.T
            return P
        P = np.full((L, L), self.neutral, dtype=np.float32)  # specials stay neutral
        sub = W[np.ix_(plan.rows, plan.cols)]  # (T, T)
        if self.within == "all":
            sub[plan.spans[:, None] == plan.spans[None, :]] = 1.0  # pieces of one word / phrase
        # "known": those cells keep W[phrase, phrase], the provider's value (NaN -> neutral)
        P[np.ix_(plan.a_tok, plan.b_tok)] = sub
        return P

    def _matrix(self, al: Alignment, pair: bool) -> np.ndarray:
        plan = self._plan(al, pair)
        return self._fill(plan, self._word_matrices([(plan.left, plan.right)])[0])

    def _word_matrices(self, blocks: Sequence[tuple[list[str], list[str]]]) -> list[np.ndarray]:
        """Provider values for several (left keys, right keys) blocks with ONE provider call.

        Stop words get ``stop_value``, unknown values (NaN) ``neutral``.
        """
        stop = self.stop_words
        fill = self.stop_value if stop is not None else self.neutral
        out, lefts, rights, slots = [], [], [], []
        for b, (left, right) in enumerate(blocks):
            out.append(np.full((len(left), len(right)), fill, dtype=np.float32))
            lq = [i for i, k in enumerate(left) if k and (stop is None or k not in stop)]
            rq = [j for j, k in enumerate(right) if k and (stop is None or k not in stop)]
            if lq and rq:
                rk = [right[j] for j in rq]
                for i in lq:
                    lefts.extend([left[i]] * len(rq))
                    rights.extend(rk)
                slots.append((b, lq, rq))
        if lefts:
            vals = self.provider.pair_similarity(lefts, rights)  # (N,)
            vals = np.where(np.isnan(vals), np.float32(self.neutral), vals)
            pos = 0
            for b, lq, rq in slots:
                n = len(lq) * len(rq)
                out[b][np.ix_(lq, rq)] = vals[pos:pos + n].reshape(len(lq), len(rq))
                pos += n
        return out
