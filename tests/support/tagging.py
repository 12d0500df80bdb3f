"""Helpers of the tagging tests and benchmarks: a plain JSON Lines writer of tagged documents
(picklable, so Dask workers can build it), a tiny real NER run, and corpora made of words."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from priorkit.documents import Document, TaggedDocument


class JsonWriter:
    """One JSON object per tagged document (id, entities with offsets, type and score)."""

    def header(self) -> str:
        return ""

    def document(self, tagged: TaggedDocument) -> str:
        return json.dumps({"id": tagged.id, "entities": [
            [e.start, e.end, e.text, e.type, e.score] for e in tagged.entities]}, ensure_ascii=False) + "\n"

    def footer(self) -> str:
        return ""


class XmlishWriter(JsonWriter):
    """A writer with a header and a footer (BioC's shape), to test that both land once."""

    def header(self) -> str:
        return "<collection>\n"

    def footer(self) -> str:
        return "</collection>\n"


CONLL = """\
Aspirin\tB-Chemical
causes\tO
severe\tO
nausea\tB-Disease
.\tO

Patients\tO
given\tO
lithium\tB-Chemical
carbonate\tI-Chemical
developed\tO
renal\tB-Disease
failure\tI-Disease
.\tO

"""


def train_tiny_ner(tmp: Path, model: Path, repeat: int = 4, prior: str = "") -> Path:
    """A tiny real NER run (a 2-layer BERT, one epoch on CONLL x ``repeat``; ``prior``: the
    pipeline's prior line, if any): its run folder."""
    from priorkit.config import load_config
    from priorkit.training.steps import run_pipeline

    (tmp / "train.conll").write_text(CONLL * repeat)
    path = tmp / "p.yaml"
    path.write_text(f"name: t\noutput_dir: {tmp / 'runs'}\nmodel: {{name_or_path: {model}, max_length: 24}}\n"
                    + textwrap.dedent(f"""\
                        task: {{type: token-classification, metric: f1}}
                        data:
                          train: {{path: {tmp / 'train.conll'}}}
                          eval: {{path: {tmp / 'train.conll'}, limit: 2}}
                        """) + prior
                    + "train: {epochs: 1, learning_rate: 1.0e-3, batch_size: 8, progress: false, threads: 1, "
                      "logging_steps: 100, save: 'no'}\n")
    result = run_pipeline(load_config(str(path), ()), log=lambda m: None)
    return result.plan.run_dir


WORDS = ("Aspirin causes severe nausea . Patients given lithium carbonate developed renal failure after "
         "the dose of haloperidol and tremor was seen in two of them").split()


def word_corpus(path: Path, n: int, seed: int = 0, bad_at: int | None = None, longest: int = 15) -> Path:
    """``n`` JSON Lines documents of 3 to ``longest`` words drawn from WORDS (ids doc0..), one
    line each; ``bad_at``: that line (1-based) is not JSON."""
    import random

    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            if bad_at is not None and i + 1 == bad_at:
                fh.write('{"id": "broken", "text": \n')
                continue
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, longest)))
            fh.write(json.dumps({"id": f"doc{i}", "text": text}) + "\n")
    return path


def jsonl_documents(path: Path) -> Any:
    """The documents of a word corpus without H1's reader: ``Document(id, text, source=file:line)``;
    a line that is not JSON raises a DocumentError naming file:line."""
    from priorkit.errors import DocumentError

    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            try:
                record = json.loads(line)
            except ValueError:
                raise DocumentError(f"{path}:{number}: not a JSON object; fix or remove the line") from None
            yield Document(record["id"], record["text"], source=f"{path}:{number}")


def tag_file(model: str, corpus: str, out: str, chunk_size: int, engine: str = "local", restart: bool = False,
             batch_size: int = 16, **engine_options: Any) -> Any:
    """``corpus`` (a word corpus) tagged into ``out`` by ``model`` through :func:`tag_corpus`,
    resumable: what the kill -9 test's child process and the test's resumes run."""
    from priorkit.tagging import make_engine, tag_corpus
    from priorkit.tagging.commit import run_fingerprint
    from priorkit.tagging.taggers import model_job

    fingerprint = run_fingerprint(model, [corpus], {"chunk_size": chunk_size, "batch_size": batch_size})
    job = model_job(model, JsonWriter, batch_size=batch_size, threads=1)
    with make_engine(engine, **engine_options) as eng:
        return tag_corpus(jsonl_documents(Path(corpus)), job, JsonWriter(), out=out, fingerprint=fingerprint,
                          chunk_size=chunk_size, engine=eng, restart=restart, progress=False)


if __name__ == "__main__":  # python tests/support/tagging.py MODEL CORPUS OUT CHUNK: the child a test kills
    import sys

    tag_file(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
