"""Self-training's teacher labelling its unlabelled text on a tagging engine (docs/silver.md,
"Self-training"; the pipeline's ``engine`` section).

The silver store (:class:`~priorkit.supervision.silver.store.SilverStore`) stays the one place
the labels land: it cuts the sentences it lacks into chunks and writes one shard per chunk; with
an engine, the chunks are labelled by the engine's processes (:func:`labelled_chunks`) and come
back in order, so the store's shards are the ones a local labelling writes.

A Dask worker rebuilds the labeller from a :class:`TeacherRecipe`: the teacher's model folder,
its threshold and merge rule, and the dictionary's provider by registered name and parameters
(as ``precompute --engine dask`` does, :func:`priorkit.precompute.dask_worker.build_provider`);
the labeller's fingerprint must come out as the driver's, or the worker stops with both.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import socket
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import PriorkitError
from ..precompute.dask_worker import ProviderRecipe, build_provider, provider_recipe
from ..providers.spec import PriorSpec
from .engines import Engine
from .jobs import Job


@dataclasses.dataclass(frozen=True)
class TeacherRecipe:
    """What a process needs to rebuild a :class:`~priorkit.supervision.silver.teacher.TeacherLabeller`."""

    folder: str
    threshold: float
    entity_threshold: float | None
    merge: str
    batch_size: int
    dictionary: ProviderRecipe | None
    types: dict[str, str] | None
    fingerprint: str
    threads: int | None = None


def teacher_recipe(labeller: Any, threads: int | None = None,
                   dictionary: tuple[str, dict[str, Any] | None] | None = None) -> TeacherRecipe:
    """``dictionary``: the dictionary provider's registered name and the parameters it was built
    with (``prior.silver``'s provider and params); None: read back from the provider itself."""
    d = labeller.dictionary
    recipe = None
    if d is not None:
        recipe = provider_recipe(d.provider) if dictionary is None else \
            ProviderRecipe(PriorSpec(provider=dictionary[0], params=dict(dictionary[1] or {})), d.provider.fingerprint)
    return TeacherRecipe(str(Path(labeller.folder).resolve()), labeller.threshold, labeller.entity_threshold,
                         labeller.merge, labeller.batch_size, recipe, dict(d.types) if d is not None else None,
                         labeller.fingerprint, threads)


def build_teacher(recipe: TeacherRecipe) -> Callable[[Sequence[Sequence[str]]], list[list[str]]]:
    """The labeller of ``recipe`` in this process (its ``tags_many``), checked against the driver's."""
    import torch

    from ..inference import load_model
    from ..supervision.silver.label import Labeller
    from ..supervision.silver.teacher import TeacherLabeller

    from .jobs import dask_worker_threads

    threads = recipe.threads or dask_worker_threads()
    if threads:
        torch.set_num_threads(threads)
    where = f"{socket.gethostname()} (PID {os.getpid()})"
    dictionary = None
    if recipe.dictionary is not None:
        dictionary = Labeller(build_provider(recipe.dictionary, where), recipe.types or {})
    labeller = TeacherLabeller(load_model(recipe.folder), recipe.folder, recipe.threshold, dictionary, recipe.merge,
                               batch_size=recipe.batch_size, entity_threshold=recipe.entity_threshold)
    if labeller.fingerprint != recipe.fingerprint:
        raise PriorkitError(f"{where} rebuilt the teacher {recipe.folder} with fingerprint {labeller.fingerprint}, "
                            f"not the driver's {recipe.fingerprint}: the workers see another model folder or "
                            "dictionary; give them the same files (or run the teacher locally: engine: {type: local})")
    return labeller.tags_many


def teacher_job(labeller: Any, threads: int | None = None,
                dictionary: tuple[str, dict[str, Any] | None] | None = None) -> Job:
    return Job(labeller.fingerprint, functools.partial(build_teacher, teacher_recipe(labeller, threads, dictionary)))


def labelled_chunks(engine: Engine, labeller: Any, threads: int | None = None,
                    dictionary: tuple[str, dict[str, Any] | None] | None = None
                    ) -> Callable[[Iterable[list[list[str]]]], Iterator[list[list[str]]]]:
    """For :meth:`SilverStore.fill <priorkit.supervision.silver.store.SilverStore.fill>`: chunks of
    sentences in, their labels out, in order, labelled by ``engine``'s processes."""
    job = teacher_job(labeller, threads, dictionary)

    def run(chunks: Iterable[list[list[str]]]) -> Iterator[list[list[str]]]:
        for result in engine.map(job, chunks):
            yield result.value

    return run


def fill_store(store: Any, sentences: Sequence[Sequence[str]], chunk_size: int, engine: str = "local",
               workers: int | None = None, scheduler: str | None = None, client: Any = None,
               dictionary: tuple[str, dict[str, Any] | None] | None = None) -> dict[str, int]:
    """``store.fill`` with the labeller's chunks labelled on ``engine`` (``local``: this process,
    as before; ``dask``: a LocalCluster of ``workers`` processes, the cluster at ``scheduler``, or
    ``client``'s).  A cluster is started only when the store lacks some sentence's labels.
    ``dictionary``: the (provider, params) the teacher's dictionary was built from."""
    if engine == "local" and client is None:
        return store.fill(sentences, chunk_size)
    from .dask_engine import DaskEngine, local_threads

    threads = local_threads(workers or 2) if scheduler is None and client is None else None
    with DaskEngine(client=client, scheduler=scheduler, workers=workers or 2) as eng:
        counts = store.fill(sentences, chunk_size, label_chunks=labelled_chunks(eng, store.labeller, threads, dictionary))
        return {**counts, "dask_workers": eng.workers}  # 0: nothing to label, no cluster started


__all__ = ["TeacherRecipe", "teacher_recipe", "build_teacher", "teacher_job", "labelled_chunks", "fill_store"]
