"""Did the trained model use its prior?  One cheap measure per run, kept in ``metrics.json``.

After the evaluate step, the first :data:`SAMPLE` examples of the reported split go
through the trained model twice, with the prior and without it, and the attention
of the layers and heads that get the prior is captured from those forward passes
(:mod:`priorkit.attention.capture`).  The measure is the one ``priorkit show``
prints per head (docs/show.md): the attention mass on the cells the prior favours
(keys whose prior value is above the row's mean), pooled over every counted row
of the sample and every prior head; ``shift`` is the mass with the prior minus
without it.  Modes with a learnable parameter also report the trained gates or
strengths (their mean over heads: a gate near 0 means the model learned to
ignore the prior).  A shift near 0 with no gain says the prior was ignored; a
clear shift with no gain says it was used in vain.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

#: examples of the reported split measured (the first ones: the same for every run of a sweep)
SAMPLE = 32
_BATCH = 8


def measure(predictor: Any, task: Any, examples: Sequence[dict], split: str, sample: int = SAMPLE
            ) -> dict[str, Any] | None:
    """The usage record of a loaded run (a :class:`priorkit.Predictor` and the run's task, whose
    ``encode`` makes the collator's rows); None without an attention prior."""
    from ..inference.attention_view import capture_batch, favoured_mass, learned_values, prior_settings

    model = predictor.model
    settings = prior_settings(model)
    if predictor.builder is None or settings is None or not examples:
        return None
    layers = tuple(settings["layers"])
    heads = tuple(settings.get("heads") or range(int(model.config.num_attention_heads)))
    collate = predictor.collator()
    chosen = list(examples[:sample])
    model.eval()
    mass_on = np.zeros(len(heads) * len(layers))
    mass_off = np.zeros_like(mass_on)
    share, rows = 0.0, 0
    for start in range(0, len(chosen), _BATCH):
        batch = collate([task.encode(e) for e in chosen[start:start + _BATCH]])
        on = capture_batch(model, batch, layers, heads, prior=True)  # (B, layers, heads, L, L)
        off = capture_batch(model, batch, layers, heads, prior=False)
        for j in range(on.shape[0]):
            keep = np.flatnonzero(batch["attention_mask"][j].numpy())  # real tokens only
            prior = batch["prior"][j].float().numpy()[np.ix_(keep, keep)]
            for k in range(len(layers)):
                cut = np.ix_(range(len(heads)), keep, keep)
                m_on, s, n = favoured_mass(on[j, k][cut], prior)
                m_off, _, _ = favoured_mass(off[j, k][cut], prior)
                mass_on[k * len(heads):(k + 1) * len(heads)] += m_on
                mass_off[k * len(heads):(k + 1) * len(heads)] += m_off
                share += float(s) / len(layers)
                rows += n
    record: dict[str, Any] = {"split": split, "examples": len(chosen), "mode": settings.get("mode"),
                              "layers": list(layers), "heads": list(heads)}
    if rows:
        per_layer_rows = rows / len(layers)  # every layer counts the same rows
        with_, without = float(mass_on.sum() / (per_layer_rows * len(heads) * len(layers))), \
            float(mass_off.sum() / (per_layer_rows * len(heads) * len(layers)))
        record.update(mass_with=round(with_, 6), mass_without=round(without, 6), shift=round(with_ - without, 6),
                      favoured_share=round(share / per_layer_rows, 6))
    else:
        record.update(mass_with=None, mass_without=None, shift=None, favoured_share=None)
    learned = learned_values(model)
    if learned:
        values = [v for _, per_head in learned.values() for v in per_head.values()]
        record["learned"] = {"name": next(iter(learned.values()))[0],
                             "mean": round(float(np.mean(values)), 6),
                             "per_layer": {str(layer): [round(v, 6) for v in per_head.values()]
                                           for layer, (_, per_head) in sorted(learned.items())}}
    return record


def describe(usage: dict[str, Any] | None) -> str:
    """One line for the end of ``priorkit run``."""
    if not usage:
        return "prior usage: no attention prior in this run (the measure needs one; priorkit show compares any channel on and off)"
    if usage.get("shift") is None:
        text = "prior usage: the prior is constant on every row of the sample (no favoured cells)"
    else:
        text = (f"prior usage: attention on the cells the prior favours {usage['mass_with']:.3f} with the prior, "
                f"{usage['mass_without']:.3f} without ({usage['shift']:+.3f}; uniform {usage['favoured_share']:.3f})"
                f", layers {usage['layers']}, {usage['examples']} {usage['split']} examples")
    learned = usage.get("learned")
    if learned:
        text += f"; learned {learned['name']} mean {learned['mean']:.3f}"
    return text
