"""How a process builds a tagger of documents from a model folder (:func:`load_tagger`), and
the job that tags chunks with it (:func:`model_job`).

The model folder is loaded with :func:`priorkit.inference.load_model` (one model or a recipe);
its ``tag_documents`` tags the documents (segmentation, the model, the recipe's steps,
character offsets: docs/tagging.md, "What happens to a document").  ``device="cuda"`` runs the
model under bf16 autocast.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..documents import Document, TaggedDocument
from ..errors import PriorkitError


class ModelTagger:
    """A loaded model's ``tag_documents`` as a tagger: a list of documents in, the list out."""

    def __init__(self, model: Any, batch_size: int = 32) -> None:
        if not hasattr(model, "tag_documents"):
            raise PriorkitError(f"{getattr(model, 'folder', model)} cannot tag documents (no tag_documents); "
                                "load an NER model folder or a recipe")
        if getattr(model, "task_type", "token-classification") != "token-classification":
            raise PriorkitError(f"{model.folder} is a {model.task_type} model; tagging documents needs an NER "
                                "(token-classification) model or a recipe")
        self.model, self.batch_size = model, batch_size

    def __call__(self, docs: list[Document]) -> list[TaggedDocument]:
        return list(self.model.tag_documents(docs, batch_size=self.batch_size))


class Autocast:
    """A tagger run under bf16 autocast on ``device_type`` (``cuda``: what ``--device cuda`` does;
    ``cpu``: the same casts on a CPU, for tests).  The model's outputs are read back as float32."""

    def __init__(self, tagger: Callable[[list[Document]], Sequence[TaggedDocument]], device_type: str = "cuda") -> None:
        self.tagger, self.device_type = tagger, device_type

    def __call__(self, docs: list[Document]) -> Sequence[TaggedDocument]:
        import torch

        with torch.autocast(device_type=self.device_type, dtype=torch.bfloat16):
            return self.tagger(docs)


def check_device(device: str | None) -> None:
    """Stop before loading anything when ``device`` asks for a GPU this machine lacks."""
    if device and str(device).startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise PriorkitError(f"--device {device}: no CUDA GPU is visible to torch {torch.__version__} on this "
                                "machine; drop --device (CPU) or run where a GPU is")


def load_tagger(folder: str, batch_size: int = 32, device: str | None = None, threads: int | None = None,
                load: dict[str, Any] | None = None) -> Callable[[list[Document]], Sequence[TaggedDocument]]:
    """What a process builds once per tagging job: the model folder loaded (``load``: keyword
    arguments of :func:`~priorkit.inference.load_model`), as a tagger of documents."""
    import torch

    from ..inference import load_model

    from .jobs import dask_worker_threads

    threads = threads or dask_worker_threads()
    if threads:
        torch.set_num_threads(int(threads))
    check_device(device)
    model = load_model(folder, device=device, **(load or {}))
    tagger = ModelTagger(model, batch_size)
    return Autocast(tagger, "cuda") if device and str(device).startswith("cuda") else tagger


def model_job(folder: str, make_writer: Callable[[], Any], *, batch_size: int = 32, device: str | None = None,
              threads: int | None = None, load: dict[str, Any] | None = None) -> Any:
    """The :class:`~priorkit.tagging.jobs.Job` that tags chunks with the model ``folder`` and
    serialises them with ``make_writer()`` (picklable: Dask workers build it themselves)."""
    import functools
    import json
    from pathlib import Path

    from ..checksums import json_sha256
    from .jobs import Job, build_chunk_tagger

    folder = str(Path(folder).expanduser().resolve())
    key = "tag-" + json_sha256(json.loads(json.dumps(
        {"model": folder, "batch_size": batch_size, "device": device, "threads": threads, "load": load or {},
         "writer": repr(make_writer)}, default=str)), 16)
    make_tagger = functools.partial(load_tagger, folder, batch_size, device, threads, load)
    return Job(key, functools.partial(build_chunk_tagger, make_tagger, make_writer))


__all__ = ["ModelTagger", "Autocast", "load_tagger", "model_job", "check_device"]
