"""The run plan's way through ``train_run`` (issue 31, "a short way through"; issue 47: the plan
and every part of it): which priorkit modules the plan, its config and its sections pass
through, in order, and how often they climb back up the layering.

A tiny real run: the first ``--sentences`` BC5CDR train sentences (fraction 0.5: half gold,
the rest silver text), the embedded MiniLM, the HPO+MeSH ontology with the attention channel
(concept prior, layer 0, ``bias``), the features channel and silver labels (``weight: auto``,
so the dictionary is calibrated on the gold subset first), one epoch.  Variants: ``default``
(recipe ``mix``), ``then-gold`` (silver first, then gold) and ``teacher`` (self-training: a
teacher trained first, then two rounds of students, each scored on 4 devel sentences).
``train_run`` is called under ``sys.setprofile``; only calls whose code lives in priorkit
(``priorkit`` and ``priorkit_plugins``) are kept, module bodies run by a first import are not
calls.

Definitions (what the numbers count):

* **plan-carrying call**: a call of a priorkit function that receives a ``RunPlan`` as an
  argument (``self``, positional, keyword, ``*args`` and ``**kwargs`` included) or through a
  closure cell (a nested function using the plan of the function around it, such as the
  ``finish`` that ``ranks.on_main`` calls back); any instance counts: the plan ``train_run``
  got, the plans made from it (calibrated, one-pass, a self-training run's teacher or round),
  and a property read on it (``plan.run_dir``) is a call of plan.py.
* **walk**: the modules of the plan-carrying calls under ``train_run`` (the root included),
  in call order, consecutive repeats merged; **modules**: the distinct modules of the walk.
* **layer**: the module's place in :data:`LAYERS` (low to high; the order stated in
  docs/architecture.md, "A run's plan through train_run", and checked here against the
  import graph: no module imports one of a higher layer); ``training/`` and
  ``evaluation/`` have sub-layers (:data:`INNER`), compared after the room's.
* **climb**: a plan-carrying call made from a module of a lower layer than the callee's
  module (the caller is the nearest priorkit frame up the stack, so a call through
  transformers' ``Trainer`` counts from the priorkit code that called the Trainer).  A climb
  is control handed back up against the import direction: a callback.
* **the plan or a part of it** (the targets, issue 47: at most 12 modules and 3 climbs): the
  same counts for the calls that receive the plan or any part of it -- its ``PipelineConfig``,
  ``PriorConfig`` and every dataclass section under them (``plan.prior.silver``,
  ``plan.prior.silver.teacher``, ``plan.cfg.task`` ...), the same objects, not copies or values
  read from them: a stage that reads the section's values and hands them down plain (strings,
  numbers, mappings, a ``PriorSpec`` or ``ChannelSetting`` it builds) hands no part down.
* also reported: the walk of the **plan** object alone (issue 31's count), the walks' **rises**
  (steps to a higher layer, returns included), and every upward call of the whole call tree,
  counted by (caller, callee) module (dispatch through objects handed down: a provider's
  ``compute``, a channel's ``batch_tensors``).

    .venv/bin/python benchmarks/plan_walk.py [--variant default|then-gold|teacher|all] [--sentences 16]
                                             [--json docs/results/plan-walk.json] [--before OLD.json]

``--before``: the ``--json`` file of an earlier commit, for a comparison (docs/archive/issue-31.md
made one with ``git worktree add /tmp/old COMMIT``, this file copied into it, and
``PYTHONPATH=/tmp/old`` so that the old priorkit is imported).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]

sys.path.insert(0, str(ROOT / "tests"))
from test_structure import architecture_layers, import_graph  # noqa: E402 - the structure test's reading of the docs
from test_structure import layer_of as _layer_of  # noqa: E402

sys.path.pop(0)

#: layers, low to high, and the ordered sub-layers of the rooms that have them: docs/architecture.md's
#: "Layers, low to high", read as tests/test_structure.py reads it
LAYERS, INNER = architecture_layers()


def layer_of(module: str) -> tuple[int, int]:
    """(layer, sub-layer) of a dotted module name (ValueError for a module outside the layers)."""
    where = _layer_of(module, LAYERS, INNER)
    if where is None:
        raise ValueError(f"{module}: in no layer of docs/architecture.md")
    return where


def layer_name(module: str) -> str:
    i, sub = layer_of(module)
    room = next(n for n in LAYERS[i] if module == n or module.startswith(n + ".")) if LAYERS[i] else str(i)
    return f"{i + 1}:{room.removeprefix('priorkit.')}" + (f".{sub}" if room in INNER else "")


def short(module: str) -> str:
    """``priorkit.training.train`` -> ``training/train.py`` (a package's ``__init__``: its folder)."""
    if module.startswith("priorkit_plugins"):
        return "plugins/" + "/".join(module.split(".")[1:]) + ".py"
    parts = module.split(".")[1:]
    path = ROOT / "priorkit" / Path(*parts) if parts else ROOT / "priorkit"
    return "/".join(parts) + "/" if path.is_dir() else "/".join(parts) + ".py"


def upward_imports() -> list[str]:
    """Imports from a module to one of a higher layer (none: the map is a layering of the code)."""
    return sorted(f"{m} -> {t}" for m, ts in import_graph().items() for t in ts
                  if not m.startswith(t + ".") and layer_of(t) > layer_of(m))


# ---------------------------------------------------------------------------
# the tracer
# ---------------------------------------------------------------------------
_VARARGS, _VARKEYWORDS = 0x04, 0x08


@dataclasses.dataclass
class Call:
    module: str
    function: str
    caller: str | None  # the nearest priorkit frame's module
    plan: bool  # an argument is a RunPlan
    part: bool  # an argument is a RunPlan or a part of one


class Tracer:
    """``sys.setprofile`` hook: every call into priorkit code, with its priorkit caller."""

    def __init__(self, plan_type: type) -> None:
        self.plan_type = plan_type
        self.calls: list[Call] = []
        self.stack: list[Any] = []  # priorkit frames now running (innermost last)
        self.parts: dict[int, Any] = {}  # id -> object: the plans seen and their dataclass parts

    def _add_parts(self, obj: Any) -> None:
        """``obj`` and its dataclass fields, recursively (walked each time a plan is seen: a
        plan caught in its own ``__init__`` has no fields yet)."""
        self.parts[id(obj)] = obj
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name, None)
            if dataclasses.is_dataclass(value) and not isinstance(value, type) and id(value) not in self.parts:
                self._add_parts(value)

    def _arguments(self, frame: Any) -> list[Any]:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & _VARARGS) + bool(code.co_flags & _VARKEYWORDS)
        local = frame.f_locals
        out = []
        for i, name in enumerate(code.co_varnames[:n]):
            value = local.get(name)
            if i >= code.co_argcount + code.co_kwonlyargcount and isinstance(value, (tuple, dict)):
                out += list(value.values()) if isinstance(value, dict) else list(value)
            else:
                out.append(value)
        return out + [local.get(name) for name in code.co_freevars]  # a closure's cells

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if not module.startswith("priorkit") or frame.f_code.co_name == "<module>":
                return
            values = self._arguments(frame)
            plan = False
            for v in values:
                if isinstance(v, self.plan_type):
                    plan = True
                    self._add_parts(v)
            part = plan or any(id(v) in self.parts and self.parts[id(v)] is v for v in values)
            caller = self.stack[-1].f_globals["__name__"] if self.stack else None
            name = frame.f_code.co_qualname
            if "__create_fn__" in name and values:  # a dataclass's generated method
                name = f"{type(values[0]).__name__}.{frame.f_code.co_name}"
            self.calls.append(Call(module, name, caller, plan, part))
            self.stack.append(frame)
        elif event == "return" and self.stack and self.stack[-1] is frame:
            self.stack.pop()


# ---------------------------------------------------------------------------
# the counts
# ---------------------------------------------------------------------------
def walk_of(calls: list[Call], key: str) -> dict[str, Any]:
    """The walk, modules, climbs and rises of the calls with ``key`` (``plan`` or ``part``)."""
    chosen = [c for c in calls if getattr(c, key)]
    walk: list[dict[str, Any]] = []
    climbs = []
    for c in chosen:
        climb = c.caller is not None and layer_of(c.caller) < layer_of(c.module)
        if climb:
            climbs.append(f"{short(c.caller)} -> {short(c.module)} ({c.function})")
        if walk and walk[-1]["module"] == c.module:
            if c.function not in walk[-1]["functions"]:
                walk[-1]["functions"].append(c.function)
            walk[-1]["climbs"] += climb
            continue
        walk.append({"module": c.module, "file": short(c.module), "layer": layer_name(c.module),
                     "functions": [c.function], "from": short(c.caller) if c.caller else None,
                     "climbs": int(climb)})
    rises = sum(layer_of(b["module"]) > layer_of(a["module"]) for a, b in zip(walk, walk[1:]))
    modules = list(dict.fromkeys(step["file"] for step in walk))
    return {"modules": len(modules), "module_list": modules, "climbs": len(climbs), "climb_calls": climbs,
            "rises": rises, "steps": len(walk), "calls": len(chosen), "walk": walk}


def upward_edges(calls: list[Call]) -> dict[str, int]:
    """Every call of the tree from a lower layer to a higher one, by (caller, callee) module."""
    out: dict[str, int] = {}
    for c in calls:
        if c.caller is not None and layer_of(c.caller) < layer_of(c.module):
            edge = f"{short(c.caller)} -> {short(c.module)}"
            out[edge] = out.get(edge, 0) + 1
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------
ONTOLOGY = {"source": "hpo+mesh", "measure": "concept", "within": 1.0, "related": 0.8, "unrelated": 0.5, "hops": 2}
VARIANTS = ("default", "then-gold", "teacher")
#: issue 47: the plan and every part of it pass at most this many modules and climb at most this often
TARGETS = {"modules": 12, "climbs": 3}


def config(out: Path, variant: str, sentences: int) -> dict[str, Any]:
    silver: dict[str, Any] = {"recipe": "mix", "weight": "auto"}
    if variant == "then-gold":
        silver = {"recipe": "then-gold", "silver_epochs": 1}
    elif variant == "teacher":
        silver = {"recipe": "mix", "teacher": {"threshold": 0.3, "rounds": 2}}  # teacher, 2 students, each judged
    return {
        "name": "plan-walk", "output_dir": str(out),
        "model": {"max_length": 64},  # null name_or_path: the embedded MiniLM
        "task": {"type": "token-classification",
                 "dictionary_types": {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}},
        "data": {"train": {"source": "bc5cdr", "split": "train", "limit": sentences},
                 "eval": {"source": "bc5cdr", "split": "devel", "limit": 4}},  # read, not scored
        "prior": {"name": "walk", "provider": "ontology", "params": ONTOLOGY, "layout": "full", "keys": "strip",
                  "neutral": 0.5, "within": "known", "cache": None,
                  "attention": {"layers": [0], "mode": "bias", "options": {"lam": 1.0}},
                  "features": {"learning_rate": 3e-3}, "silver": silver,
                  "calibrate": {"threshold": 0.5}},
        "train": {"epochs": 1, "batch_size": 8, "fraction": 0.5, "subset": "per-seed", "seed": 0, "threads": 2,
                  "save": "no", "progress": False},
    }


def measure(variant: str, sentences: int) -> dict[str, Any]:
    import contextlib
    import io

    from priorkit.config import config_from_dict
    from priorkit.training.data import load_data
    from priorkit.training.plan import RunPlan, plan_for_run
    from priorkit.training.train import train_run

    with tempfile.TemporaryDirectory(prefix="plan-walk-") as tmp:
        cfg = config_from_dict(config(Path(tmp) / "runs", variant, sentences))
        splits = load_data(cfg)
        plan = plan_for_run(cfg)
        tracer = Tracer(RunPlan)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # the calibration's report
            sys.setprofile(tracer)
            try:
                summary = train_run(plan, splits, resume=False)
            finally:
                sys.setprofile(None)
        seconds = time.perf_counter() - t0
    calls = tracer.calls
    assert calls and calls[0].function == "train_run", "the trace's root is not train_run"
    return {
        "variant": variant,
        "run": {"sentences": sentences, "gold": summary["examples"], "steps": summary["steps"],
                "silver_rows": (summary.get("silver") or {}).get("rows"), "seconds_traced": round(seconds, 1)},
        "priorkit_calls": len(calls),
        "plan": walk_of(calls, "plan"),
        # the plan or a part of it (the targets): counts, modules and climbs (its walk is long)
        "plan_or_part": {k: v for k, v in walk_of(calls, "part").items() if k != "walk"},
        "all_modules": len({c.module for c in calls}),
        "upward_call_edges": upward_edges(calls),
    }


def report(result: dict[str, Any]) -> None:
    p, q = result["plan"], result["plan_or_part"]
    print(f"\n== {result['variant']}: {result['run']}")
    ok = q["modules"] <= TARGETS["modules"] and q["climbs"] <= TARGETS["climbs"]
    print(f"the plan or a part of it: modules {q['modules']}, climbs {q['climbs']} (targets: at most "
          f"{TARGETS['modules']} and {TARGETS['climbs']}: {'met' if ok else 'MISSED'}), rises {q['rises']}")
    print(f"    {', '.join(q['module_list'])}")
    for c in q["climb_calls"]:
        print(f"    climb: {c}")
    print(f"the plan's walk ({p['calls']} plan-carrying calls, {p['steps']} steps):")
    for i, step in enumerate(p["walk"], 1):
        funcs = ", ".join(step["functions"][:4]) + (", ..." if len(step["functions"]) > 4 else "")
        mark = f"  CLIMB x{step['climbs']}" if step["climbs"] else ""
        print(f"  {i:2d}. {step['file']:<28} [{step['layer']}] {funcs}{mark}")
    print(f"  modules: {p['modules']}   climbs: {p['climbs']}   rises: {p['rises']}")
    for c in p["climb_calls"]:
        print(f"    climb: {c}")
    print(f"every priorkit call of the tree: {result['priorkit_calls']} calls, {result['all_modules']} modules; "
          "upward edges (dispatch):")
    for edge, n in result["upward_call_edges"].items():
        print(f"    {edge}: {n}")


def counts(result: dict[str, Any]) -> dict[str, Any]:
    p, q = result["plan"], result["plan_or_part"]
    return {"modules": p["modules"], "climbs": p["climbs"], "rises": p["rises"], "climb_calls": p["climb_calls"],
            "part_modules": q["modules"], "part_climbs": q["climbs"]}


def compare(path: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of an earlier --json file, printed beside these."""
    old = json.loads(Path(path).read_text())
    then = {r["variant"]: counts(r) for r in old["results"]}
    print(f"\nbefore ({path}, {old['date']}) -> now:")
    for r in results:
        a, b = then.get(r["variant"]), counts(r)
        if a is not None:
            print(f"  {r['variant']:<10} modules {a['modules']} -> {b['modules']}, "
                  f"climbs {a['climbs']} -> {b['climbs']}; "
                  f"plan or part: modules {a['part_modules']} -> {b['part_modules']}, "
                  f"climbs {a['part_climbs']} -> {b['part_climbs']}")
    return {"file": Path(path).name, "date": old["date"], "counts": then}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variant", choices=[*VARIANTS, "all"], default="all")
    ap.add_argument("--sentences", type=int, default=16)
    ap.add_argument("--json", nargs="?", const=str(ROOT / "docs" / "results" / "plan-walk.json"), default=None,
                    help="write the results here (default path: docs/results/plan-walk.json)")
    ap.add_argument("--before", default=None,
                    help="an earlier --json file (say, of a checkout before a change): its counts are printed beside "
                         "these and kept under 'before'")
    args = ap.parse_args()
    import logging

    logging.disable(logging.WARNING)
    up = upward_imports()
    print(f"layer map vs the import graph: {len(up)} imports go up" + "".join(f"\n    {u}" for u in up))
    variants = VARIANTS if args.variant == "all" else (args.variant,)
    results = []
    for v in variants:
        results.append(measure(v, args.sentences))
        report(results[-1])
    before = compare(args.before, results) if args.before else None
    if args.json:
        import torch
        import transformers

        out = {
            "command": "python benchmarks/plan_walk.py" + " ".join([""] + sys.argv[1:]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__,
            "targets": {**TARGETS, "of": "plan_or_part"},
            "layers": [{"layer": i + 1, "modules": names} for i, names in enumerate(LAYERS)],
            "sub_layers": INNER,
            "upward_imports": up,
            "results": results,
        }
        if before is not None:
            out["before"] = before
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
