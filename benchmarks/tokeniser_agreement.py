"""Which sentence splitter and word tokeniser agree best with BC5CDR's own split (issue 45)?

The models are trained on BC5CDR's CoNLL words (``data/bc5cdr/*.tsv``), which split at every
punctuation character (``56 - year - old``, ``2 . 5 mcg / kg``, ``K ( + ) - channels``).  A
document tagger must split raw text into sentences and words; the closer its words are to the
training words, the less it surprises the model.  This script rebuilds the test split as raw
text (:func:`priorkit.evaluation.offsets.rebuilt_documents`: runs of 10 sentences,
:func:`priorkit.documents.conll.detokenize`'s spacing) and measures, for each candidate:

* **tokens**: precision / recall / F1 of the candidate's token character spans against the
  corpus's words (exact spans);
* **sentences**: precision / recall / F1 of sentence starts (the first of each rebuilt
  document left out: it is given);
* **entity edges**: share of gold entities whose start is a token start and whose end a token
  end of the candidate (else the tagger cannot even express the entity);
* **entities in one sentence**: share of gold entities that no predicted sentence boundary cuts;
* **abbreviation cases**: sentence-start F1 on :data:`ABBREVIATIONS`, 12 hand-written
  PubMed-style texts (``et al.``, ``Fig. 2``, ``vs.``, ``i.p. Three days later``, ...);
* **speed**: gold sentences per second, the whole split segmented once (after one warm-up
  document), wall clock.

Caveat: the text was rebuilt from the corpus's words, so any rule that splits at every
punctuation character gets their tokens back exactly here; on real PubMed text (``10mg``,
unusual spacing) it is not exact, and the sentence splitter is what these numbers tell apart.

    .venv/bin/python benchmarks/tokeniser_agreement.py [--split data/bc5cdr/test.tsv]
                                   [--json docs/results/bc5cdr-tokeniser-agreement.json]

scispaCy is measured when ``import scispacy`` works (its tokenizer rules need only spaCy; the
package's own dependencies pin numpy < 2, so install it with ``pip install --no-deps --target
DIR scispacy`` and put DIR on PYTHONPATH).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from priorkit.evaluation.offsets import rebuilt_documents  # noqa: E402

WORD = re.compile(r"\w+|[^\w\s]")
Spans = list[tuple[int, int]]
Segmenter = Callable[[str], tuple[Spans, Spans]]  # text -> (sentence spans, token spans)


def punct_words(text: str, sentences: Spans) -> Spans:
    """Every run of word characters and every other non-space character, within each sentence."""
    return [(m.start(), m.end()) for s, e in sentences for m in WORD.finditer(text, s, e)]


# --- sentence splitters ------------------------------------------------------------
_REGEX_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


def regex_sentences(text: str) -> Spans:
    out, start = [], 0
    for m in _REGEX_SENT.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return out


def syntok_analyze(text: str) -> tuple[Spans, Spans]:
    from syntok import segmenter

    sents, toks = [], []
    for paragraph in segmenter.analyze(text):
        for sentence in paragraph:
            spans = [(t.offset, t.offset + len(t.value)) for t in sentence if t.value]
            if spans:
                sents.append((spans[0][0], spans[-1][1]))
                toks.extend(spans)
    return sents, toks


_PYSBD = None


def pysbd_sentences(text: str) -> Spans:
    global _PYSBD
    import pysbd

    if _PYSBD is None:
        _PYSBD = pysbd.Segmenter(language="en", clean=False, char_span=True)
    out = []
    for span in _PYSBD.segment(text):
        s, e = span.start, span.end
        while e > s and text[e - 1].isspace():
            e -= 1
        out.append((s, e))
    return out


_NLP: dict[str, object] = {}


def _spacy(kind: str):
    if kind not in _NLP:
        import spacy

        nlp = spacy.blank("en")
        if kind == "scispacy":
            from scispacy.custom_sentence_segmenter import pysbd_sentencizer  # noqa: F401 (registers it)
            from scispacy.custom_tokenizer import combined_rule_tokenizer

            nlp.tokenizer = combined_rule_tokenizer(nlp)
            nlp.add_pipe("pysbd_sentencizer")
        else:
            nlp.add_pipe("sentencizer")
        _NLP[kind] = nlp
    return _NLP[kind]


def spacy_analyze(kind: str, text: str) -> tuple[Spans, Spans]:
    doc = _spacy(kind)(text)
    sents = [(s.start_char, s.end_char) for s in doc.sents]
    toks = [(t.idx, t.idx + len(t.text)) for t in doc if not t.is_space]
    return sents, toks


def priorkit_segment(text: str) -> tuple[Spans, Spans]:
    from priorkit.documents.segment import split_text

    sentences = split_text(text)
    return [(x.start, x.end) for x in sentences], [(t.start, t.end) for x in sentences for t in x.tokens]


def candidates() -> dict[str, Segmenter]:
    out: dict[str, Segmenter] = {
        "regex sentences + punctuation words (no library)": lambda t: (regex_sentences(t), punct_words(t, regex_sentences(t))),
        "syntok": syntok_analyze,
        "syntok sentences + punctuation words": lambda t: ((s := syntok_analyze(t)[0]), punct_words(t, s)),
        "priorkit segment() (the choice: syntok sentences + punctuation words)": priorkit_segment,
        "pysbd sentences + punctuation words": lambda t: ((s := pysbd_sentences(t)), punct_words(t, s)),
        "spaCy blank en (tokenizer + sentencizer)": lambda t: spacy_analyze("spacy", t),
        "spaCy sentencizer + punctuation words": lambda t: ((s := spacy_analyze("spacy", t)[0]), punct_words(t, s)),
    }
    try:
        import scispacy  # noqa: F401
    except ImportError:
        return out
    out["scispaCy tokenizer + pysbd_sentencizer"] = lambda t: spacy_analyze("scispacy", t)
    out["scispaCy sentences + punctuation words"] = lambda t: ((s := spacy_analyze("scispacy", t)[0]), punct_words(t, s))
    return out


#: hand-written PubMed-style text with its sentence starts: abbreviations that end in a period
#: inside a sentence, and true ends after one (the rebuilt corpus text has few of either)
ABBREVIATIONS = [
    ["Smith et al. reported the same effect in rats.", "It was dose dependent."],
    ["Dr. Jones treated the patient with aspirin.", "The pain resolved."],
    ["As shown in Fig. 2, the rash cleared.", "No relapse occurred."],
    ["Drugs such as e.g. Aspirin and ibuprofen were stopped.", "Symptoms improved."],
    ["Cisplatin vs. Placebo was compared in 40 patients.", "Nephrotoxicity was rare."],
    ["The U.S. Food and Drug Administration approved it in 2001.", "Sales rose."],
    ["Rats received 5 mg/kg i.p.", "Three days later, the kidneys were examined."],
    ["The dose was 2.5 mg.", "The patient recovered after 3 days."],
    ["Approx. 10% of patients developed hepatitis B.", "Most recovered."],
    ["Levels rose (P < 0.05).", "Tremor was seen in 3 patients (i.e. 12%)."],
    ["The drug (Sigma Chemical Co., St. Louis, MO) was dissolved in saline.", "Rats were dosed."],
    ["Cocaine-induced chest pain was studied.", "What causes it?", "Vasospasm is likely."],
]


def abbreviation_agreement(segment: Segmenter) -> dict[str, float]:
    tp = n_pred = n_gold = 0
    for sentences in ABBREVIATIONS:
        text = " ".join(sentences)
        starts = [sum(len(x) + 1 for x in sentences[:i]) for i in range(1, len(sentences))]
        pred = {s for s, _ in segment(text)[0][1:]}
        tp += len(pred & set(starts))
        n_pred += len(pred)
        n_gold += len(starts)
    return prf(tp, n_pred, n_gold)


def prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return {"precision": round(100 * p, 2), "recall": round(100 * r, 2),
            "f1": round(100 * (2 * p * r / (p + r) if p + r else 0.0), 2)}


def measure(segment: Segmenter, docs) -> dict:
    segment(docs[0].text)  # warm-up: rules compiled, models built
    tok_tp = tok_pred = tok_gold = 0
    sent_tp = sent_pred = sent_gold = 0
    edges = inside = n_ent = 0
    start = time.perf_counter()
    outputs = [segment(d.text) for d in docs]
    seconds = time.perf_counter() - start
    for doc, (sents, toks) in zip(docs, outputs):
        gold_toks = {span for sentence in doc.offsets for span in sentence}
        pred_toks = set(toks)
        tok_tp += len(gold_toks & pred_toks)
        tok_pred += len(pred_toks)
        tok_gold += len(gold_toks)
        gold_starts = {sentence[0][0] for sentence in doc.offsets[1:]}
        pred_starts = {s for s, _ in sents[1:]}
        sent_tp += len(gold_starts & pred_starts)
        sent_pred += len(pred_starts)
        sent_gold += len(gold_starts)
        tok_starts, tok_ends = {s for s, _ in toks}, {e for _, e in toks}
        for s, e, _ in doc.entities:
            n_ent += 1
            edges += s in tok_starts and e in tok_ends
            inside += not any(s < b < e for b in pred_starts)
    n_sent = sum(len(d.offsets) for d in docs)
    return {"abbreviation_cases": abbreviation_agreement(segment),"tokens": prf(tok_tp, tok_pred, tok_gold), "sentences": prf(sent_tp, sent_pred, sent_gold),
            "entity_edges": round(100 * edges / n_ent, 2), "entities_in_one_sentence": round(100 * inside / n_ent, 2),
            "sentences_per_second": round(n_sent / seconds, 1), "seconds": round(seconds, 2)}


def versions() -> dict[str, str]:
    out = {}
    for name in ("syntok", "pysbd", "spacy", "scispacy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            try:
                mod = __import__(name)
                out[name] = getattr(mod, "__version__", "?") + " (not installed as a distribution)"
            except ImportError:
                out[name] = "not installed"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default=str(ROOT / "data" / "bc5cdr" / "test.tsv"))
    parser.add_argument("--per-document", type=int, default=10)
    parser.add_argument("--json", default=str(ROOT / "docs" / "results" / "bc5cdr-tokeniser-agreement.json"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    docs = rebuilt_documents(args.split, args.per_document)
    results = {}
    for name, segment in candidates().items():
        results[name] = measure(segment, docs)
        print(f"{name[:55]:55s} tokens F1 {results[name]['tokens']['f1']:6.2f}  sentences F1 "
              f"{results[name]['sentences']['f1']:6.2f}  edges {results[name]['entity_edges']:6.2f}  "
              f"in one sentence {results[name]['entities_in_one_sentence']:6.2f}  "
              f"abbreviation cases F1 {results[name]['abbreviation_cases']['f1']:6.2f}  "
              f"{results[name]['sentences_per_second']:8.1f} sentences/s", flush=True)
    record = {
        "command": "python benchmarks/tokeniser_agreement.py " + " ".join(sys.argv[1:]),
        "split": os.path.relpath(args.split, ROOT), "documents": len(docs), "per_document": args.per_document,
        "sentences": sum(len(d.offsets) for d in docs), "words": sum(len(s) for d in docs for s in d.offsets),
        "entities": sum(len(d.entities) for d in docs),
        "date": datetime.date.today().isoformat(), "machine": f"{os.cpu_count()}-core CPU VM, {platform.python_version()}",
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "versions": versions(), "results": results,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
