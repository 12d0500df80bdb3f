"""Tagging a corpus (issue 46): the measured tables of docs/benchmarks.md (block ``tagging-table``)
and docs/scaling.md (block ``tagging-scaling``), from ``docs/results/tagging-*.json`` (the JSON
files ``benchmarks/tag_throughput.py``, ``tag_memory.py``, ``kill_resume.py``, ``tag_dask.py``,
``tag_bad_input.py`` and ``tag_gpu.py`` write).

Every number of the tables comes from those files: speeds, ratios, peaks, counts, dates, the
commands and the one-minute load average before / after each script.  What the files do not hold
stays constant text below, named as such: issue 46's sizes, that each script ran under the
machine's queue (``exclusive``), and three asides of the memory row measured outside the
benchmark (:data:`MEMORY_FIRST_RUN`, :data:`TRIM_GAVE_BACK`, :data:`TRIM_UTC`) and the kill row's
first run (:data:`KILL_FIRST_RUN`)."""
from __future__ import annotations

import re

from .tables import Results

THROUGHPUT, MEMORY, TRIM = "tagging-throughput.json", "tagging-memory.json", "tagging-memory-trim.json"
KILL, DASK, BAD, GPU = "tagging-kill-resume.json", "tagging-dask.json", "tagging-bad-input.json", "tagging-gpu.json"
# ---- not in the files: constants --------------------------------------------------------------
#: issue 46's sizes, against which each script's size is stated
ISSUE = {"memory": "20k against 400k", "memory_sentences": "20k against 400k sentences", "kill": "200k",
         "dask": "200k", "bad": "150,000"}
#: the memory benchmark's first run (not kept as a file), quoted beside the kept one
MEMORY_FIRST_RUN = "a first run: 1,521 and 1,861, 1.22x"
#: what clearing the memo and ``malloc_trim(0)`` gave back in one process (1,855 -> 1,360 MiB; scaling.md)
TRIM_GAVE_BACK = "500 MiB"
#: when the trimmed run started (the file holds the date only)
TRIM_UTC = "05:14 UTC"
#: the kill benchmark's first run (before a fix to the script; not kept as a file)
KILL_FIRST_RUN = ("a first run, whose wait for the first commit read the previous trial's `.progress`, fixed "
                  "since: 5 of 5 equal, 2 kills mid-tagging, 3 during the model's load")
ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh", 8: "eighth"}


def _load(j: dict) -> str:
    """The one-minute load average before / after the script."""
    return f"{j['load_before'][0]:.1f} / {j['load_after'][0]:.1f}"


def _command(j: dict) -> str:
    return j["command"].removeprefix("benchmarks/")


def _file(name: str) -> str:
    return f"[{name}](results/{name})"


def _target_ratio(j: dict) -> float:
    """``tag_memory.py``'s target, "... at most 15% above ...", as a ratio (1.15)."""
    return 1 + int(re.search(r"at most (\d+)%", j["target"]).group(1)) / 100


def memory_slope(j: dict, start: int = 3000) -> int:
    """How fast the large run's RSS climbed from ``start`` documents to the end: the least-squares
    slope of its trace's peak RSS over documents committed, MiB per 1,000 documents, to the nearest 5
    (the sampling every 2 s makes it rough)."""
    cols = j["runs"][str(max(int(k) for k in j["runs"]))]
    i, k = cols["trace_columns"].index("documents committed"), cols["trace_columns"].index("peak_rss_mib")
    pts = [(r[i], r[k]) for r in cols["trace"] if r[i] >= start]
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return int(5 * round(1000 * slope / 5))


def _sizes(j: dict) -> tuple[dict, dict]:
    small, large = sorted(j["runs"].values(), key=lambda r: r["sentences"])
    return small, large


def _mib(v: float) -> str:
    return f"{v:,.0f}"


def _killed(j: dict) -> tuple[int, int, list[int]]:
    """(trials, kills mid-tagging, the committed documents of the killed trials, sorted)."""
    trials = j["trials"]
    return len(trials), j["killed_mid_run"], sorted(t["committed_documents"] for t in trials if t["killed"])


def _ended_first(n: int, killed: int, words: str) -> str:
    left = n - killed
    if left == 0:
        return ""
    return f", the {ORDINAL.get(n, str(n) + 'th')} run {words}" if left == 1 else f", {left} runs {words}"


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def _workers(j: dict) -> int:
    return int(re.search(r"(\d+) Dask workers", j["runs"]["dask"]["summary"]).group(1))


def _bad_stop(j: dict) -> str:
    """The error line without its temporary folder: ``big.jsonl:3001: the record has no 'text'``."""
    m = re.search(r"error: (?:\S*/)?([^/\s:]+:\d+: [^;]+);", j["stop"]["message"])
    return m.group(1)


def _gpu(j: dict, cpu: str) -> str:
    runs = "; ".join(f"{r['documents_per_second']:.1f} documents/s at batch {r['batch_size']}"
                     + ("" if r["device"] == "cpu" else f" ({r['device']}, {r['precision']})") for r in j["runs"])
    return cpu.format(runs=runs) if not j["cuda"] else runs


def _speed(s: dict, name: str) -> str:
    v = s[name]["sentences_per_second"]
    return f"{v:,.0f}" if v >= 1000 else f"{v:.1f}"


def tagging_table(res: Results) -> str:
    """docs/benchmarks.md's table: one row a question, the result in brief, the command and file."""
    tp, mem, trim, kill, dask, bad, gpu = (res.json(n) for n in (THROUGHPUT, MEMORY, TRIM, KILL, DASK, BAD, GPU))
    s, t = tp["systems"], tp["targets"]
    small, large = _sizes(mem)
    tsmall, tlarge = _sizes(trim)
    target = _target_ratio(mem)
    n, killed, _ = _killed(kill)
    equal = sum(x["equal_to_uninterrupted"] for x in kill["trials"])
    rows = [
        (THROUGHPUT, f"throughput against `transformers.pipeline(\"token-classification\")` ({tp['sentences']} "
                     "sentences, best batch each)",
         f"pipeline {_speed(s, 'hf')} sentences/s; token features {_speed(s, 'features')} "
         f"(**{tp['ratio_features_to_hf']:.2f}x** its time, target {t['features']:g}x); the recipe "
         f"{_speed(s, 'recipe')} (**{tp['ratio_recipe_to_hf']:.2f}x**, target {t['recipe']:g}x); no knowledge "
         f"{_speed(s, 'plain')}; the dictionary alone {_speed(s, 'dictionary')}"),
        (MEMORY, f"peak RSS of `priorkit predict`, corpus {large['sentences'] / small['sentences']:g}x larger "
                 f"({small['sentences']:,} against {large['sentences']:,} sentences; the issue: {ISSUE['memory']})",
         f"{_mib(small['peak_rss_mib'])} against {_mib(large['peak_rss_mib'])} MiB: "
         f"**{mem['rss_ratio_large_to_small']:.2f}x** (target {target:g}x: "
         f"{'met' if mem['rss_ratio_large_to_small'] <= target else 'missed'}), climbing {memory_slope(mem)} MiB per "
         f"1,000 documents: memory glibc kept after the chunks freed it (`malloc_trim` gave back {TRIM_GAVE_BACK}); "
         f"with `malloc_trim` after every chunk **{trim['rss_ratio_large_to_small']:.2f}x** "
         f"({_mib(tsmall['peak_rss_mib'])} against {_mib(tlarge['peak_rss_mib'])} MiB; {_file(TRIM)}, {TRIM_UTC}, "
         f"load {_load(trim)})"),
        (KILL, f"kill -9 at a random moment, then the same command ({kill['sentences']:,} sentences; the issue: "
               f"{ISSUE['kill']})",
         f"**{equal} of {n}** resumed files equal to the uninterrupted one, byte for byte; {killed} kills "
         f"mid-tagging{_ended_first(n, killed, 'had ended first')}"),
        (DASK, f"Dask, {_workers(dask)} local workers against one process ({dask['sentences']:,} sentences; the "
               f"issue: {ISSUE['dask']})",
         f"{'equal' if dask['equal_bytes'] else 'DIFFERENT'} bytes; **{dask['speedup_wall']:.2f}x** "
         f"({dask['runs']['dask']['wall_seconds']:.1f} against {dask['runs']['local']['wall_seconds']:.1f} s): "
         f"{'slower' if dask['speedup_wall'] < 1 else 'faster'} on {dask['threads']} cores"),
        (BAD, f"a bad record at line {bad['bad_at']:,} of {bad['lines']:,} (the issue: line {ISSUE['bad']}), then "
              "`--skip-bad`",
         f"{'stops with file:line' if bad['stop']['rc'] else 'DID NOT STOP'}, "
         f"{bad['stop']['committed_documents']:,} documents committed; `--skip-bad` lists it and ends "
         f"{'equal' if bad['skip_bad']['equal_to_a_skip_bad_run_from_the_start'] else 'NOT equal'} to a "
         "`--skip-bad` run from the start"),
        (GPU, "`--device cuda`, bf16 autocast", _gpu(gpu, "no GPU here: CPU only, {runs}")),
    ]
    out = ["| question | result | command (`.venv/bin/python benchmarks/...`) | file | date, load |",
           "|---|---|---|---|---|"]
    for name, question, result in rows:
        j = res.json(name)
        out.append(f"| {question} | {result} | `{_command(j)}` | {_file(name)} | {j['date']}, `exclusive`, "
                   f"load {_load(j)} |")
    return "\n".join(out) + "\n"


def tagging_scaling(res: Results) -> str:
    """docs/scaling.md's table: the same measurements in full, with issue 46's target beside each."""
    tp, mem, trim, kill, dask, bad, gpu = (res.json(n) for n in (THROUGHPUT, MEMORY, TRIM, KILL, DASK, BAD, GPU))
    s, t = tp["systems"], tp["targets"]
    batches = {v["batch_size"] for v in s.values() if v["batch_size"] is not None}
    met = {k: tp[f"ratio_{k}_to_hf"] <= t[k] for k in ("features", "recipe")}
    small, large = _sizes(mem)
    tsmall, tlarge = _sizes(trim)
    target, ratio = _target_ratio(mem), mem["rss_ratio_large_to_small"]
    n, killed, at = _killed(kill)
    equal = sum(x["equal_to_uninterrupted"] for x in kill["trials"])
    workers, d, loc = _workers(dask), dask["runs"]["dask"], dask["runs"]["local"]
    stop, skip = bad["stop"], bad["skip_bad"]
    chunks = stop["committed_documents"] / bad["chunk_size"]
    rows = [
        (THROUGHPUT, f"throughput, {tp['sentences']} sentences, each system at its fastest batch size "
                     f"({'%d for all' % batches.pop() if len(batches) == 1 else ', '.join(map(str, sorted(batches)))})",
         f"transformers' `pipeline(\"token-classification\")` on the bare model {_speed(s, 'hf')} sentences/s; "
         f"priorkit with token features **{_speed(s, 'features')}** ({tp['ratio_features_to_hf']:.2f}x the "
         f"pipeline's time); the recipe **{_speed(s, 'recipe')}** ({tp['ratio_recipe_to_hf']:.2f}x); priorkit "
         f"without knowledge {_speed(s, 'plain')} ({tp['ratio_plain_to_hf']:.2f}x); the dictionary matcher alone "
         f"{_speed(s, 'dictionary')}",
         f"features at most {t['features']:g}x, recipe at most {t['recipe']:g}x: "
         + (f"**met** (on {tp['sentences']} sentences)" if all(met.values()) else
            "; ".join(f"{k} **{'met' if ok else 'missed'}**" for k, ok in met.items())
            + f" (on {tp['sentences']} sentences)")),
        (MEMORY, f"peak memory, small against {large['sentences'] / small['sentences']:g}x larger corpus "
                 "(token-features model, `priorkit predict` as a child)",
         f"{small['sentences']:,} sentences {_mib(small['peak_rss_mib'])} MiB, {large['sentences']:,} sentences "
         f"{_mib(large['peak_rss_mib'])} MiB: **{ratio:.2f}x** ({MEMORY_FIRST_RUN}); RSS climbed about "
         f"{memory_slope(mem)} MiB per 1,000 documents to the end",
         f"at most {target:g}x for {ISSUE['memory_sentences']}: **{'met' if ratio <= target else 'missed'}** at "
         f"{small['sentences']:,} against {large['sentences']:,}; with `malloc_trim` after every chunk (below) "
         f"**{trim['rss_ratio_large_to_small']:.2f}x** ({_mib(tsmall['peak_rss_mib'])} and "
         f"{_mib(tlarge['peak_rss_mib'])} MiB)"),
        (KILL, "kill -9 at random moments, then the same command again",
         f"{equal} of {n} resumed files equal to the uninterrupted run's, byte for byte ({kill['sentences']:,} "
         f"sentences, chunks of {kill['chunk_size']}); {killed} kills mid-tagging (after "
         f"{_and([f'{c:,}' for c in at])} committed documents)"
         f"{_ended_first(n, killed, 'had finished before its random moment came')} ({KILL_FIRST_RUN})",
         f"{n} kills during a {ISSUE['kill']}-sentence run: {'met' if equal == n else 'MISSED'} at "
         f"{kill['sentences']:,} sentences, with {killed} of {n} kills mid-tagging"),
        (DASK, f"Dask, {workers} local workers ({dask['threads'] // workers} thread"
               f"{'s' if dask['threads'] // workers > 1 else ''} each) against one process ({dask['threads']} "
               f"threads), {dask['sentences']:,} sentences",
         f"{'equal' if dask['equal_bytes'] else 'DIFFERENT'} bytes; **{dask['speedup_wall']:.2f}x** "
         f"({d['wall_seconds']:.1f} s against {loc['wall_seconds']:.1f} s wall; "
         f"{d['documents_per_second_once_loaded']:.1f} against {loc['documents_per_second_once_loaded']:.1f} "
         f"documents/s once loaded): {'slower' if dask['speedup_wall'] < 1 else 'faster'} on {dask['threads']} cores",
         "equal output, speed-up stated"),
        (BAD, f"a bad record (no `text`) at line {bad['bad_at']:,} of {bad['lines']:,}",
         f"stops with `{_bad_stop(bad)}`, {stop['committed_documents']:,} documents ({chunks:g} chunks of "
         f"{bad['chunk_size']}) committed; `--skip-bad` goes on, lists it, writes {skip['documents']:,} documents, "
         f"{'equal' if skip['equal_to_a_skip_bad_run_from_the_start'] else 'NOT equal'} byte for byte to a "
         "`--skip-bad` run from the start",
         f"line {ISSUE['bad']}: {'met' if stop['rc'] and skip['equal_to_a_skip_bad_run_from_the_start'] else 'MISSED'}"
         f" at line {bad['bad_at']:,}"),
        (GPU, "GPU, `--device cuda` in bf16 autocast",
         _gpu(gpu, "no GPU on this machine: the script measured the CPU only ({runs}) and says so"),
         "measured where a GPU is"),
    ]
    out = ["| question | measured | issue 46's target | command (`.venv/bin/python benchmarks/...`) | file | load |",
           "|---|---|---|---|---|---|"]
    for name, question, measured, goal in rows:
        j = res.json(name)
        out.append(f"| {question} | {measured} | {goal} | `{_command(j)}` | {_file(name)} | {_load(j)} |")
    return "\n".join(out) + "\n"

