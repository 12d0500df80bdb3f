"""Silver labels on disk: JSONL shards keyed by sentence digest, one folder per labeller.

``<folder>/<labeller fingerprint>/shard-000000.jsonl`` holds one line per sentence,
``{"d": <sentence digest>, "t": [tags]}``.  Sentences are labelled ``chunk_size`` at a
time; each chunk is written to a ``.tmp`` file, flushed to disk and renamed into place,
so a kill (even ``kill -9``) loses at most the chunk being labelled and never leaves a
half-written shard under a shard's name.  A rerun reads which digests the shards hold
and labels only the rest.  Only one chunk's labels are in memory while labelling; the
store is content-addressed, so the seeds and settings of a sweep that label the same
sentences with the same labeller share it.
"""
from __future__ import annotations

import collections
import itertools
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ...errors import PriorkitError
from .label import sentence_digest

SHARD_GLOB = "shard-*.jsonl"


class SilverStore:
    """The labels of one labeller under ``folder`` (see the module doc)."""

    def __init__(self, folder: str | os.PathLike, labeller: Any) -> None:
        self.labeller = labeller
        self.dir = Path(folder) / labeller.fingerprint

    def shards(self) -> list[Path]:
        return sorted(self.dir.glob(SHARD_GLOB))

    def _lines(self) -> Iterator[dict]:
        for shard in self.shards():
            with shard.open("r", encoding="utf-8") as fh:
                for number, line in enumerate(fh, 1):
                    try:
                        yield json.loads(line)
                    except ValueError:
                        raise PriorkitError(f"{shard}:{number}: not a silver-label line; delete the shard "
                                            "(it is labelled again on the next run)") from None

    def known(self) -> set[str]:
        """Digests of the sentences the store holds."""
        return {row["d"] for row in self._lines()}

    def fill(self, sentences: Iterable[Sequence[str]], chunk_size: int = 2000,
             progress: Callable[[int, int], None] | None = None,
             label_chunks: Callable[[Iterable[list[list[str]]]], Iterable[list[list[str]]]] | None = None
             ) -> dict[str, int]:
        """Label every sentence the store lacks, ``chunk_size`` per shard; returns counts.

        ``label_chunks``: chunks of sentences in, their tags out in the same order (another
        process's or a Dask cluster's labeller: :func:`priorkit.tagging.teacher.labelled_chunks`);
        default: this labeller's ``tags_many``, one chunk after the other."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for stale in self.dir.glob("*.tmp"):  # a chunk a kill cut short
            stale.unlink()
        meta = self.dir / "labeller.json"
        if not meta.exists():
            _atomic_write(meta, json.dumps({"fingerprint": self.labeller.fingerprint, **self.labeller.describe()},
                                           indent=1, default=str))
        have = self.known()
        todo: dict[str, list[str]] = {}
        for words in sentences:
            d = sentence_digest(words)
            if d not in have and d not in todo:
                todo[d] = list(words)
        start = max((int(p.stem.split("-")[1]) for p in self.shards()), default=-1) + 1
        items = iter(todo.items())
        pending: collections.deque = collections.deque()

        def chunks() -> Iterator[list[list[str]]]:
            while chunk := list(itertools.islice(items, chunk_size)):
                pending.append(chunk)
                yield [w for _, w in chunk]

        label = label_chunks or (lambda cs: (self.labeller.tags_many(c) for c in cs))
        done = 0
        for index, tags in zip(itertools.count(start), label(chunks())):
            chunk = pending.popleft()
            if len(tags) != len(chunk):
                raise PriorkitError(f"{self.dir}: the labeller gave {len(tags)} label lists for {len(chunk)} sentences")
            text = "".join(json.dumps({"d": d, "t": t}) + "\n" for (d, _), t in zip(chunk, tags))
            _atomic_write(self.dir / f"shard-{index:06d}.jsonl", text)
            done += len(chunk)
            if progress is not None:
                progress(done, len(todo))
        return {"known": len(have), "labelled": done}

    def tags_for(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """The stored tags of ``sentences``, in order (every one must be in the store)."""
        want = [sentence_digest(w) for w in sentences]
        need = set(want)
        found: dict[str, list[str]] = {}
        for row in self._lines():
            if row["d"] in need:
                found[row["d"]] = row["t"]
        missing = len(need - set(found))
        if missing:
            raise PriorkitError(f"{self.dir}: {missing} sentence(s) have no silver labels; fill the store first")
        return [found[d] for d in want]


def label_sentences(folder: str | os.PathLike, labeller: Any, sentences: Sequence[Sequence[str]],
                    chunk_size: int = 2000) -> list[list[str]]:
    """Silver tags of ``sentences`` through the store under ``folder`` (labelling what it lacks)."""
    store = SilverStore(folder, labeller)
    store.fill(sentences, chunk_size)
    return store.tags_for(sentences)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
