"""What a trial leaves behind when it stops early: shared by the single study and the arms."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def recorded_failures(ctx: Any, trial: Any) -> Iterator[None]:
    """Around a trial's runs: an interrupted trial is marked so, a pruned one passes, and a
    failing one leaves its reason (for trials.md) and its whole traceback beside the study."""
    import optuna

    try:
        yield
    except KeyboardInterrupt:
        trial.set_user_attr("interrupted", True)
        raise
    except optuna.TrialPruned:
        raise
    except Exception as exc:
        import traceback

        trial.set_user_attr("error", f"{type(exc).__name__}: {exc}"[:500])
        errors = ctx.root / "errors"
        errors.mkdir(parents=True, exist_ok=True)
        (errors / f"trial-{trial.number}.txt").write_text(traceback.format_exc())
        raise
