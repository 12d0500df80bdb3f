"""Tagging a corpus (docs/tagging.md, "Tagging a corpus"): documents read as a stream, tagged in
chunks sorted by length, written in input order in committed chunks that a restart resumes, on
this process or on Dask workers.

* :mod:`.run`: :func:`tag_corpus`, the one sequence;
* :mod:`.jobs`: what each process does with a chunk (the tagger built once, sort, tag, render);
* :mod:`.commit`: the committed output and its ``.progress`` file (fingerprints, resume);
* :mod:`.engines`, :mod:`.dask_engine`: ``local`` and ``dask``;
* :mod:`.taggers`: a model folder as a tagger (:func:`load_tagger`, :func:`model_job`);
* :mod:`.progress`: documents per second and the time left;
* :mod:`.teacher`: self-training's teacher labelling its text on the same engines.
"""
from __future__ import annotations

from .commit import CommittedOutput
from .engines import Engine, LocalEngine
from .jobs import Job
from .run import DEFAULT_CHUNK_SIZE, TagSummary, make_engine, tag_corpus

__all__ = ["tag_corpus", "TagSummary", "Job", "Engine", "LocalEngine", "make_engine", "CommittedOutput",
           "DEFAULT_CHUNK_SIZE"]
