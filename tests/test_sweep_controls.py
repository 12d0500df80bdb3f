"""``sweep.controls``: a prior pays off only when it beats the baseline **and** its control.

The rule itself (:func:`priorkit.evaluation.verdict.judge`) on hand-made per-seed scores
whose answer is known; the config errors by file and line; and a tiny sweep (random
2-layer BERT, real STS-B pairs, real WordNet) whose controls.md / .csv / .png and CLI
lines agree with the paired values computed here from results.csv."""
from __future__ import annotations

import csv
import re
import statistics
import textwrap
from pathlib import Path

import pytest
import yaml

from priorkit.evaluation import verdict as vd
from priorkit.config import ConfigError, load_config
from priorkit.stats import paired

BASE = [0.50, 0.55, 0.47, 0.52, 0.49]  # the no-prior score of seeds 0-4


def scores(**settings: list[float]) -> dict[tuple[str, float], dict[int, float]]:
    return {(name, 1.0): dict(enumerate(values)) for name, values in settings.items()}


def verdict_of(table, *, higher: bool = True, fraction: float = 1.0) -> vd.Verdict:
    comps = vd.control_comparisons(table, {"prior": "control"}, "none", [fraction])
    [v] = vd.control_verdicts(comps, {"prior": "control"}, "none", [fraction], higher)
    return v


def test_beats_the_baseline_but_not_its_control_does_not_pay_off():
    prior = [b + d for b, d in zip(BASE, [0.030, 0.032, 0.028, 0.031, 0.029])]  # +3 points on every seed
    control = [p + d for p, d in zip(prior, [0.004, -0.006, 0.002, -0.003, 0.001])]  # as good, no knowledge
    v = verdict_of(scores(none=BASE, prior=prior, control=control))
    assert not v.pays_off
    assert v.label.startswith("no: vs control: 95% CI [") and "vs none" not in v.label
    # the CI in the reason is the paired one over the per-seed differences
    s = paired([p - c for p, c in zip(prior, control)])
    assert f"[{100 * s.ci_low:+.2f}, {100 * s.ci_high:+.2f}]" in v.reason and s.ci_low < 0 < s.ci_high


def test_beats_the_baseline_and_its_control_pays_off():
    prior = [b + d for b, d in zip(BASE, [0.030, 0.032, 0.028, 0.031, 0.029])]
    control = [b + d for b, d in zip(BASE, [0.001, -0.002, 0.003, 0.000, -0.001])]  # no better than none
    v = verdict_of(scores(none=BASE, prior=prior, control=control))
    assert v.pays_off and v.label == "yes" and v.reason == "beats none and control"


def test_neither_and_the_lower_is_better_direction():
    noisy = [b + d for b, d in zip(BASE, [0.05, -0.04, 0.03, -0.05, 0.02])]  # CI across 0 on both sides
    v = verdict_of(scores(none=BASE, prior=noisy, control=BASE))
    assert not v.pays_off and "vs none" in v.reason and "vs control" in v.reason
    # an error metric (mse): lower is better, so a prior that is lower on every seed pays off ...
    lower = [b - 0.03 - 0.001 * i for i, b in enumerate(BASE)]
    control = [b + 0.001 * (-1) ** i for i, b in enumerate(BASE)]
    assert verdict_of(scores(none=BASE, prior=lower, control=control), higher=False).pays_off
    # ... and the same scores judged as "higher is better" do not
    wrong = verdict_of(scores(none=BASE, prior=lower, control=control), higher=True)
    assert not wrong.pays_off and "not above 0" in wrong.reason


def test_missing_runs_and_a_single_seed_never_pay_off():
    prior = [b + 0.03 for b in BASE]
    unjudged = verdict_of(scores(none=BASE, prior=prior))
    assert unjudged.reason == "no paired runs with control control yet" and not unjudged.pays_off
    assert not unjudged.judged and unjudged.label == "not judged: no paired runs with control control yet"
    # a comparison that already fails settles it: "no", even with the control still missing
    flat = verdict_of(scores(none=BASE, prior=[b + 0.001 * (-1) ** i for i, b in enumerate(BASE)]))
    assert flat.judged and flat.label.startswith("no: vs none: 95% CI [")
    one = verdict_of(scores(none=BASE[:1], prior=prior[:1], control=BASE[:1]))
    assert not one.pays_off and "1 paired seed(s), no CI" in one.reason
    # tune.arms uses the same rule: a prior without a control cannot pay off
    comps = vd.control_comparisons(scores(none=BASE, prior=prior), {"prior": "none"}, "none", [1.0])
    lone = vd.judge("prior", 1.0, "none", comps[0], {}, True, no_control="no control arm")
    assert not lone.pays_off and lone.reason == "beats none, but no control arm to rule out the values alone"


def test_a_setting_never_run_at_a_fraction_reads_not_run_not_fails():
    prior = [b + 0.03 for b in BASE]
    table = {**scores(none=BASE, prior=prior, control=BASE), ("none", 0.5): dict(enumerate(BASE))}
    comps = vd.control_comparisons(table, {"prior": "control"}, "none", [0.5, 1.0])
    raw = vd.control_verdicts(comps, {"prior": "control"}, "none", [0.5, 1.0], True)
    assert raw[0].reason == "no paired runs with none yet"  # what the rule alone says of 0.5
    half, full = vd.mark_not_run(raw, table)
    assert (half.ran, half.pays_off, half.label) == (False, False, "not run")
    assert half.line == "fraction 0.5, prior: not run"
    assert full == raw[1] and full.ran  # a run setting keeps its verdict, whatever it is
    # a setting run at the fraction whose baseline is missing is "not judged", not "not run"
    lone = {("prior", 1.0): dict(enumerate(prior)), ("control", 1.0): dict(enumerate(BASE))}
    comps = vd.control_comparisons(lone, {"prior": "control"}, "none", [1.0])
    [v] = vd.mark_not_run(vd.control_verdicts(comps, {"prior": "control"}, "none", [1.0], True), lone)
    assert v.ran and not v.judged and v.label == "not judged: no paired runs with none yet"
    assert v.line == "fraction 1, prior: not judged (no paired runs with none yet)"


# ---- config errors by file and line ------------------------------------------------------
HEAD = """\
name: c
data:
  train: {source: stsb}
  eval: {source: stsb, split: dev}
prior: {provider: wordnet, params: {measure: wup}}
sweep:
  priors:
    none: null
    wordnet: {}
    shuffled: {provider: shuffled, params: {provider: wordnet, params: {measure: wup}, seed: 0}}
"""


@pytest.mark.parametrize("controls, key, words", [
    ("{wordnet: shufled}", "wordnet", "'shufled' is not a setting of sweep.priors (none, wordnet, shuffled)"),
    ("{wordnett: shuffled}", "wordnett", "'wordnett' is not a setting of sweep.priors"),
    ("{wordnet: wordnet}", "wordnet", "'wordnet' is its own control"),
    ("{none: shuffled}", "none", "'none' is the baseline (sweep.baseline)"),
    ("{wordnet: none}", "wordnet", "the control of 'wordnet' is the baseline 'none'"),
])
def test_bad_controls_name_the_file_and_line(tmp_path, controls, key, words):
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + f"  controls: {controls}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert re.match(rf"{re.escape(str(path))}:11: sweep\.controls\.{key}: ", msg), msg
    assert words in msg, msg


def test_controls_over_several_lines_point_at_the_entry(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + "  controls:\n    wordnet: shuffled\n    shuffled: shuffled\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:13: sweep.controls.shuffled: 'shuffled' "
                                          "is its own control"):
        load_config(path)
    path.write_text(HEAD + "  controls:\n    wordnet: shuffled\n")
    assert load_config(path).sweep.controls == {"wordnet": "shuffled"}


# ---- a tiny sweep ----------------------------------------------------------------------------
def test_sweep_writes_controls_and_prints_the_verdict(tmp_path, tiny_bert_dir):
    from click.testing import CliRunner

    from priorkit.cli import cli

    raw = yaml.safe_load(textwrap.dedent(f"""\
        name: tiny-controls
        output_dir: {tmp_path / 'runs'}
        model: {{name_or_path: {tiny_bert_dir}, max_length: 32}}
        task: {{type: regression, label_scale: 5.0, metric: pearson}}  # Spearman ties on 16 pairs
        data:
          train: {{source: stsb, split: train, sample: 16, sample_seed: 1}}
          eval: {{source: stsb, split: dev, sample: 16}}
        prior: {{provider: wordnet, params: {{measure: wup}}, attention: {{layers: [0], mode: multiply}}}}
        train: {{epochs: 1, batch_size: 8, eval_batch_size: 32, learning_rate: 1.0e-3, progress: false,
                 logging_steps: 100, threads: 1}}
        sweep:
          fractions: [0.5, 1.0]
          seeds: [0, 1]
          priors:
            none: null
            wordnet: {{}}
            shuffled: {{provider: shuffled, params: {{provider: wordnet, params: {{measure: wup}}, seed: 0}}}}
          controls: {{wordnet: shuffled}}
        """))
    path = tmp_path / "controls.yaml"
    path.write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(cli, ["sweep", str(path)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = tmp_path / "runs"
    results = list(csv.DictReader(open(out / "results.csv")))
    score = {(r["prior"], float(r["fraction"]), int(r["seed"])): float(r["eval_pearson"]) for r in results}
    rows = list(csv.DictReader(open(out / "controls.csv")))
    # every fraction: the prior vs the baseline, then vs its control; nothing for the control itself
    assert [(r["fraction"], r["setting"], r["vs"]) for r in rows] == [
        ("0.5", "wordnet", "none"), ("0.5", "wordnet", "shuffled"),
        ("1.0", "wordnet", "none"), ("1.0", "wordnet", "shuffled")]
    for r in rows:
        f = float(r["fraction"])
        d = [score[("wordnet", f, s)] - score[(r["vs"], f, s)] for s in (0, 1)]
        s = paired(d)
        assert int(r["seeds"]) == 2
        assert float(r["mean_delta"]) == pytest.approx(statistics.mean(d))
        assert float(r["ci_low"]) == pytest.approx(s.ci_low) and float(r["mde"]) == pytest.approx(s.mde)
        assert int(r["seeds_ahead"]) == sum(x > 0 for x in d) and any(x != 0 for x in d)
        # pays off only with both CIs above 0 (Pearson: higher is better)
        both = [paired([score[("wordnet", f, k)] - score[(vs, f, k)] for k in (0, 1)]).ci_low > 0
                for vs in ("none", "shuffled")]
        assert (r["pays_off"] == "yes") == all(both)
        assert r["pays_off"] == "yes" or r["pays_off"].startswith("no: vs ")
    md = (out / "controls.md").read_text()
    assert "| seeds ahead | pays off |" in md and "## Verdict" in md and md.count("| wordnet | shuffled | 2 |") == 2
    assert (out / "controls.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the CLI prints one verdict line per fraction after the table, and names the files
    lines = [ln for ln in res.output.splitlines() if ln.startswith("fraction ") and ", wordnet: " in ln]
    assert [ln.split(",")[0] for ln in lines] == ["fraction 0.5", "fraction 1"], res.output
    assert "controls_md: " in res.output and "controls_png: " in res.output
    # --report-only rebuilds them from the finished runs
    for name in ("controls.md", "controls.csv", "controls.png"):
        (out / name).unlink()
    again = CliRunner().invoke(cli, ["sweep", str(path), "--report-only"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert list(csv.DictReader(open(out / "controls.csv"))) == rows
    assert (out / "controls.png").exists() and (out / "controls.md").read_text() == md
