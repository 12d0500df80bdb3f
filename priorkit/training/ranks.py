"""Several training processes (``torchrun``, ``accelerate launch``): who writes, who waits.

The data-parallel part is the Trainer's own: it wraps the model in DDP and
``accelerate`` shards every batch sampler across the processes, so each
process collates -- and builds priors for -- only its own batches.  What is
left to a pipeline is everything around training that touches shared files:
the prior cache (DuckDB allows one writer *or* many readers), ``run.json``,
``model/``, ``metrics.json`` and the reports.  The rule here is simple: the
main process (global rank 0) decides and writes, the others wait and get the
main process's answer (:func:`on_main`), so no two processes ever write the
same file or decide differently whether to skip or resume.

With one process (no launcher, ``WORLD_SIZE`` unset) every function here is a
no-op and nothing is initialised.
"""
from __future__ import annotations

import os
from typing import Any, Callable, TypeVar

from ..errors import PriorkitError

T = TypeVar("T")

#: seconds a process waits in a barrier (``TrainingArguments.ddp_timeout``'s default)
TIMEOUT_S = 1800


def world_size() -> int:
    """Number of processes of this training job (``WORLD_SIZE``, set by the launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    """Global rank of this process (0 alone)."""
    return int(os.environ.get("RANK", "0"))


def local_world_size() -> int:
    """Processes on this machine (they share its CPU cores)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))


def is_main() -> bool:
    return rank() == 0


def _initialized() -> bool:
    import torch.distributed as tdist

    return tdist.is_available() and tdist.is_initialized()


def init(device: str) -> None:
    """Join the launcher's process group before the first barrier.

    The group is created through accelerate's ``PartialState`` with the same
    settings the Trainer's ``TrainingArguments`` use later (gloo on CPU, the
    accelerator's backend -- NCCL on CUDA -- otherwise), so the Trainer finds it
    ready and reuses it.  The timeout is the Trainer's default ``ddp_timeout``
    (30 min): a barrier waits that long, e.g. for the main process's precompute.
    """
    if world_size() <= 1 or _initialized():
        return
    from datetime import timedelta

    from accelerate import PartialState

    PartialState(cpu=device == "cpu", timeout=timedelta(seconds=TIMEOUT_S))
    import atexit

    atexit.register(shutdown)


def shutdown() -> None:
    """Leave the process group cleanly (registered at exit by :func:`init`).

    A process that exits with the group alive can die in C++ teardown
    ("terminate called without an active exception", SIGABRT) while gloo's
    threads still run, failing a launch whose work was all done.  All ranks
    meet first, so none tears down while another still talks to it.
    """
    if not _initialized():
        return
    import torch.distributed as tdist

    try:
        tdist.barrier()
    finally:
        tdist.destroy_process_group()


def barrier() -> None:
    if world_size() > 1 and _initialized():
        import torch.distributed as tdist

        tdist.barrier()


def on_main(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn`` on the main process only and give its result to every process.

    The others wait (the broadcast is the barrier) and return the same value;
    if ``fn`` raises on the main process, every process raises, so no rank is
    left waiting in a collective until the timeout.
    """
    if world_size() <= 1 or not _initialized():
        return fn(*args, **kwargs)
    import torch.distributed as tdist

    box: list[Any] = [None]
    if is_main():
        try:
            box[0] = ("ok", fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - re-raised below, on every rank
            box[0] = ("error", exc)
        try:
            import pickle

            pickle.dumps(box[0])
        except Exception:  # noqa: BLE001 - an unpicklable result or exception still ends every rank
            kind, value = box[0]
            box[0] = ("error", PriorkitError(f"rank 0 failed with {value!r}" if kind == "error"
                                             else f"rank 0's result {type(value).__name__} cannot be sent"))
    tdist.broadcast_object_list(box, src=0)
    kind, value = box[0]
    if kind == "error":
        raise value
    return value
