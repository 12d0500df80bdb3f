"""The Hugging Face ``Trainer`` of a run: its arguments from the ``train`` section, the
length-grouped sampler, the loss through the channels' hook (``loss.py``: the data's and the
channels' weights, their extra terms) and the channels' own learning rates."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import torch

from ..errors import PriorkitError
from ..output import Ticker, progress_style
from . import ranks, trackers
from .plan import RunPlan

#: env var naming a folder: each process appends the index of every training example it loads
#: to ``examples-rank<R>.txt`` there -- to check what each process of a multi-process run saw
TRACE_ENV = "PRIORKIT_TRACE_EXAMPLES"


class ListDataset(torch.utils.data.Dataset):
    """A list of example dicts as a map-style dataset (the Trainer needs ``len``).

    ``trace``: a file to which every loaded index is appended (see :data:`TRACE_ENV`).
    """

    def __init__(self, rows: Sequence[dict], trace: str | os.PathLike | None = None) -> None:
        self.rows = list(rows)
        self.trace = trace

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        if self.trace is not None:
            with open(self.trace, "a") as fh:  # per item: DataLoader workers may load it too
                fh.write(f"{i}\n")
        return self.rows[i]


def _trace_file() -> Path | None:
    folder = os.environ.get(TRACE_ENV)
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) / f"examples-rank{ranks.rank()}.txt"


class SeededLengthGroupedSampler:
    """Length-grouped order drawn from ``seed + epoch``, identical in every process.

    With several processes accelerate hands every process its own batches of
    one shared order, so all processes must draw the same order.  The stock
    ``LengthGroupedSampler`` draws from the global RNG, which drifts apart
    between processes once their batches (of different lengths) have drawn
    dropout masks; this one does not, and a resumed run redraws the same order.
    """

    def __init__(self, batch_size: int, lengths: Sequence[int], seed: int) -> None:
        self.batch_size, self.lengths, self.seed, self.epoch = batch_size, list(lengths), seed, 0

    def set_epoch(self, epoch: int) -> None:  # called by the Trainer through accelerate
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        from transformers.trainer_pt_utils import get_length_grouped_indices

        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        return iter(get_length_grouped_indices(self.lengths, self.batch_size, generator=g))


def _token_lengths(tokenizer: Any, rows: Sequence[dict], max_length: int) -> list[int]:
    if "words" in rows[0]:
        enc = tokenizer([r["words"] for r in rows], is_split_into_words=True, truncation=True,
                        max_length=max_length)
    else:
        b = [r["text_b"] for r in rows] if rows[0].get("text_b") is not None else None
        enc = tokenizer([r["text_a"] for r in rows], b, truncation=True, max_length=max_length)
    return [len(ids) for ids in enc["input_ids"]]


def make_trainer(plan: RunPlan, model: Any, tokenizer: Any, collator: Any, device: str,
                 train_rows: Sequence[dict] | None = None, eval_rows: Sequence[dict] | None = None,
                 compute_metrics: Any = None, channels: Sequence[Any] = ()):
    """A ``Trainer`` configured from the pipeline's ``train`` section.

    ``eval_rows`` (with ``compute_metrics``): scored after every epoch, the scores going to
    the callbacks' ``on_evaluate`` (``priorkit tune`` prunes on them).  ``channels``: each
    channel with a ``learning_rate`` gets an optimiser group of its own for its parameters.
    """
    from transformers import Trainer, TrainingArguments
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from .loss import task_loss

    tc = plan.cfg.train
    style = progress_style(tc.progress)  # a bar on a terminal, plain lines in a log, or nothing
    warmup: float = tc.warmup if tc.warmup < 1 else int(tc.warmup)
    reporting = trackers.prepare(plan) if train_rows else []  # docs/pipelines.md, "Trackers"
    args = TrainingArguments(
        output_dir=str(plan.run_dir / "checkpoints"),
        num_train_epochs=tc.epochs,
        max_steps=tc.max_steps,
        learning_rate=tc.learning_rate,
        per_device_train_batch_size=tc.batch_size,
        per_device_eval_batch_size=tc.eval_batch_size,
        gradient_accumulation_steps=tc.gradient_accumulation,
        warmup_steps=warmup,
        weight_decay=tc.weight_decay,
        max_grad_norm=tc.max_grad_norm,
        seed=plan.seed,
        data_seed=plan.seed,
        save_strategy="steps" if isinstance(tc.save, int) else tc.save,
        save_steps=tc.save if isinstance(tc.save, int) else 500,
        save_total_limit=1,  # the newest checkpoint is all a resume needs
        logging_strategy="steps",
        logging_steps=tc.logging_steps,
        eval_strategy="epoch" if eval_rows else "no",
        report_to=reporting or "none",
        remove_unused_columns=False,  # the raw text must reach PriorCollator
        disable_tqdm=style != "bar",
        use_cpu=device == "cpu",
        dataloader_num_workers=tc.dataloader_workers,
        fp16=tc.precision == "fp16" and device == "cuda",
        bf16=tc.precision == "bf16" and device == "cuda",
    )
    lengths = (_token_lengths(collator.tokenizer, train_rows, plan.cfg.model.max_length)
               if tc.group_by_length and train_rows else None)

    class PriorTrainer(Trainer):
        """Length-grouped batches from token counts (the rows hold raw text, not ids); the loss
        through the channels' one hook (:mod:`priorkit.training.loss`): the data's and the
        channels' weights, the channels' extra terms (the ``supervise`` mode's)."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            num_items = num_items_in_batch if self.model_accepts_loss_kwargs else None

            def stock(model, inputs):
                return super(PriorTrainer, self).compute_loss(model, inputs, return_outputs=True,
                                                              num_items_in_batch=num_items_in_batch)

            loss, outputs = task_loss(model, inputs, channels, stock, num_items, scale=self._across_devices(num_items))
            return (loss, outputs) if return_outputs else loss

        def _across_devices(self, num_items):
            """What the stock loss is multiplied by when ``num_items`` counts every process's tokens
            (the gradients are averaged over the processes); 1 in one process."""
            if num_items is None or not self.args.average_tokens_across_devices:
                return 1
            if self.args.n_gpu > 1:
                return self.args.n_gpu
            return self.accelerator.num_processes // (self.get_tp_size() if hasattr(self, "get_tp_size") else 1)

        def create_optimizer(self, model=None):
            optimizer = super().create_optimizer(model)
            for channel in channels:
                if channel.learning_rate is not None:
                    channel_param_group(optimizer, model if model is not None else self.model, channel)
            return optimizer

        def _get_train_sampler(self, train_dataset=None):
            # Several processes: accelerate shards the batches of this sampler (BatchSamplerShard),
            # so it must give every process the same order; one process keeps the stock sampler.
            if lengths is None:
                return super()._get_train_sampler(train_dataset)  # random: accelerate seeds it per epoch
            size = self.args.train_batch_size * self.args.gradient_accumulation_steps
            if self.args.world_size > 1:
                return SeededLengthGroupedSampler(size, lengths, seed=self.args.data_seed)
            return LengthGroupedSampler(size, lengths=lengths)

    dataset = ListDataset(train_rows, trace=_trace_file()) if train_rows else None
    trainer = PriorTrainer(model=model, args=args, train_dataset=dataset, data_collator=collator,
                           processing_class=tokenizer, eval_dataset=ListDataset(eval_rows) if eval_rows else None,
                           compute_metrics=compute_metrics,
                           callbacks=[trackers.restore_environment()] if reporting else None)
    if style != "bar":  # no tqdm: drop the Trainer's one printed dict per logging step too
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)
        if style == "lines":
            trainer.add_callback(progress_lines(plan.label))
    return trainer


def progress_lines(label: str) -> Any:
    """A Trainer callback for logs and pipes: one plain line every few seconds (step, epoch,
    the last logged loss; ``priorkit.output.Ticker``), from the main process only."""
    from transformers import TrainerCallback

    class ProgressLines(TrainerCallback):
        ticker: Ticker | None = None
        loss: float | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                self.ticker = Ticker(f"[{label}] train", state.max_steps or None, "steps")

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.loss = float(logs["loss"])

        def on_step_end(self, args, state, control, **kwargs):
            if self.ticker is not None:
                note = f"epoch {state.epoch or 0:.2f}" + (f", loss {self.loss:.4f}" if self.loss is not None else "")
                self.ticker.update(state.global_step - self.ticker.n, note)

        def on_train_end(self, args, state, control, **kwargs):
            if self.ticker is not None:
                self.ticker.close()
                self.ticker = None

    return ProgressLines()


def channel_param_group(optimizer: torch.optim.Optimizer, model: Any, channel: Any) -> int:
    """Move a channel's trainable parameters into a group of their own at its learning rate
    (``priorkit.optim.own_param_group``).  Returns how many tensors moved."""
    from ..optim import own_param_group

    params = channel.parameters(model)
    if not params:
        raise PriorkitError(f"{channel.name}.learning_rate is set but the model has no trainable {channel.name} "
                            "parameters" + (": enable the prior with mode: gate or learned_bias"
                                            if channel.name == "attention" else ""))
    return own_param_group(optimizer, params, channel.learning_rate)
