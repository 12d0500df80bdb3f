"""``train.report_to``'s names: what they stand for and whether they can be used (the pipeline
checks read this; the trackers themselves are set up by ``priorkit/training/trackers.py``)."""
from __future__ import annotations

import difflib

#: the extra that installs a tracker, where priorkit has one
EXTRAS = {"tensorboard": "priorkit[tensorboard]", "mlflow": "priorkit[mlflow]"}


def names(report_to: str | list[str]) -> list[str]:
    """``report_to`` as a list of names (``none`` -> [], ``all`` -> the installed ones)."""
    items = [report_to] if isinstance(report_to, str) else list(report_to)
    items = [str(i).strip() for i in items if str(i).strip()]
    if items in ([], ["none"]):
        return []
    if items == ["all"]:
        return installed()
    return list(dict.fromkeys(items))


def known() -> list[str]:
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    return sorted(INTEGRATION_TO_CALLBACK)


def installed() -> list[str]:
    from transformers.integrations.integration_utils import get_available_reporting_integrations

    return sorted(get_available_reporting_integrations())


def problem(report_to: str | list[str]) -> str | None:
    """Why ``report_to`` cannot be used (one sentence naming what exists), or None."""
    items = [report_to] if isinstance(report_to, str) else list(report_to)
    if ("none" in items or "all" in items) and len(items) > 1:
        return f"{items!r}: 'none' and 'all' stand alone; give one of them or a list of tracker names"
    wanted = names(report_to)
    everything, present = known(), installed()
    for name in wanted:
        if name not in everything:
            near = difflib.get_close_matches(name, everything, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            return (f"{name!r} is not a tracker Hugging Face knows{hint}; installed: "
                    f"{', '.join(present) or 'none'}; known: {', '.join(everything)}")
        if name not in present:
            how = f"pip install '{EXTRAS[name]}'" if name in EXTRAS else f"pip install {name}"
            return f"{name!r} is not installed ({how}); installed trackers: {', '.join(present) or 'none'}"
    return None
