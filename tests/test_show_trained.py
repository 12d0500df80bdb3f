"""priorkit show on a trained run: attention with and without the prior, the summary, the figure.

A tiny random BERT (2 layers, 4 heads) beside the real MiniLM tokenizer, trained for one
epoch on real STS-B pairs with real WordNet priors (gate mode in layer 0).
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import priorkit
from priorkit.inference.attention_view import compare, favoured_cells, favoured_mass

A, B = "A man is playing a guitar.", "A woman plays the guitar on a stage."


def train(tmp: Path, model: Path, prior: str, extra: str = "") -> Path:
    from priorkit.config import load_config
    from priorkit.training.steps import run_pipeline

    path = tmp / "p.yaml"
    path.write_text(f"name: t\noutput_dir: {tmp / 'runs'}\nmodel: {{name_or_path: {model}, max_length: 32}}\n"
                    + textwrap.dedent(f"""\
                        task: {{type: regression, label_scale: 5.0}}
                        data:
                          train: {{source: stsb, split: train, sample: 16, sample_seed: 1}}
                          eval: {{source: stsb, split: dev, sample: 8}}
                        prior: {prior}
                        """)
                    + "train: {epochs: 1, learning_rate: 1.0e-3, batch_size: 8, progress: false, threads: 1, "
                      f"logging_steps: 1, save: 'no'{extra}}}\n")
    result = run_pipeline(load_config(str(path), ()), log=lambda m: None)
    return result.plan.run_dir


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory, tiny_bert_dir):
    return train(tmp_path_factory.mktemp("gate"), tiny_bert_dir,
                 "{name: paper, preset: paper, attention: {layers: [0], mode: gate, options: {init: 0.5}}}")


# --------------------------------------------------------------------------- the measure
def test_favoured_cells_are_above_the_row_mean_and_mass_sums_their_weights():
    prior = np.array([[1.0, 1.0, 0.2], [0.5, 0.5, 0.5], [0.0, 0.9, 0.3]])
    fav = favoured_cells(prior)
    assert fav.tolist() == [[True, True, False], [False, False, False], [False, True, False]]
    weights = np.array([[[0.1, 0.2, 0.7], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]]])  # one head
    mass, share, rows = favoured_mass(weights, prior)
    assert rows == 2  # the constant row favours nothing and is left out
    assert mass[0] == pytest.approx(0.1 + 0.2 + 0.25)
    assert float(share) == pytest.approx(2 / 3 + 1 / 3)


# --------------------------------------------------------------------------- Python
def test_attention_is_the_real_forward_and_prior_off_is_the_stock_model(gate_run):
    model = priorkit.load_model(gate_run)
    on = model.attention(A, B, layers=[0, 1])
    off = model.attention(A, B, layers=[0, 1], prior=False)
    n_heads = model.model.config.num_attention_heads
    L = len(on.tokens)
    assert on.weights.shape == (2, n_heads, L, L) and on.heads == tuple(range(n_heads))
    assert np.allclose(on.weights.sum(-1), 1.0, atol=1e-5)
    assert on.prior.shape == (L, L) and on.prior_on and not off.prior_on
    assert np.abs(on.weights[0] - off.weights[0]).max() > 1e-4  # the trained gates move layer 0

    # gate mode by hand from the model's own Q and K: softmax(s QK^T (1 + g (P - 1)))
    enc = model.builder.build_batch([A], [B])
    layer0 = model.model.base_model.encoder.layer[0].attention.self
    with torch.no_grad():
        hidden = model.model.base_model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])
        q = layer0.query(hidden).view(1, L, n_heads, -1).transpose(1, 2)
        k = layer0.key(hidden).view(1, L, n_heads, -1).transpose(1, 2)
        gate = layer0.prior_gate.view(1, -1, 1, 1)
        P = enc["prior"].unsqueeze(1)
        logits = (q @ k.transpose(2, 3)) * layer0.scaling * (1 + gate * (P - 1))
        expected = logits.softmax(-1)[0].numpy()
    assert np.allclose(on.weights[0], expected, atol=1e-5)

    # prior off is the stock model: the same weights with prior attention disabled altogether
    priorkit.disable_prior_attention(model.model)
    try:
        stock = model.attention(A, B, layers=[0, 1])
    finally:  # back on through the channel: its settings from priorkit.json, its gates from the weights
        model.channel("attention").attach(model.model)
        model.channel("attention").load_state(model.model, model.folder)
    assert np.allclose(stock.weights, off.weights, atol=1e-6)
    assert model.model.config._attn_implementation == "priorkit_sdpa"  # capture put everything back

    # a gate of 0 is the stock model: with and without the prior agree
    with torch.no_grad():
        layer0.prior_gate.zero_()
    zero = model.attention(A, B, layers=[0])
    assert np.allclose(zero.weights, off.weights[:1], atol=1e-6)


def test_summary_reports_mass_shift_and_learned_gates(gate_run):
    model = priorkit.load_model(gate_run)
    result = compare(model, A, B, heads=[1, 3])
    assert [(s.layer, s.head) for s in result.summary] == [(0, 1), (0, 3)]
    gates = model.model.base_model.encoder.layer[0].attention.self.prior_gate.detach()
    fav = favoured_cells(result.with_prior.prior)
    rows = fav.any(-1)
    for s, h in zip(result.summary, (0, 1)):
        assert s.learned_name == "gate" and s.learned == pytest.approx(float(gates[[1, 3][h]]))
        on = result.with_prior.weights[0, h]
        assert s.mass_with == pytest.approx(float((on * fav).sum(-1)[rows].mean()), abs=1e-6)
        assert s.shift == pytest.approx(s.mass_with - s.mass_without)
    assert result.difference.shape == result.with_prior.weights.shape


def test_bad_layers_and_heads_name_what_exists(gate_run):
    model = priorkit.load_model(gate_run)
    with pytest.raises(priorkit.PriorkitError, match=r"^layer 2 is out of range: the model has layers 0-1$"):
        model.attention(A, B, layers=[2])
    with pytest.raises(priorkit.PriorkitError, match=r"^head 4 is out of range: the model has heads 0-3$"):
        model.attention(A, B, heads=[0, 4])


# --------------------------------------------------------------------------- the command
def in_process(capsys, *args: str) -> tuple[int, str, str]:
    from priorkit.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_show_run_writes_grid_json_and_summary(gate_run, tmp_path, capsys):
    from PIL import Image

    png, doc_path = tmp_path / "att.png", tmp_path / "att.json"
    code, out, err = in_process(capsys, "show", str(gate_run), A, B, "--heads", "0,2", "--out", str(png),
                                "--json", str(doc_path))
    assert code == 0, err
    doc = json.loads(doc_path.read_text())
    L = len(doc["tokens"])
    assert doc["layers"] == [0] and doc["heads"] == [0, 2] and doc["mode"] == "gate"
    assert np.array(doc["prior"]).shape == (L, L)
    model = priorkit.load_model(gate_run)
    on = model.attention(A, B, heads=[0, 2])
    off = model.attention(A, B, heads=[0, 2], prior=False)
    for h, entry in enumerate(doc["attention"]):
        assert np.allclose(entry["with_prior"], on.weights[0, h], atol=1e-5)
        assert np.allclose(entry["without_prior"], off.weights[0, h], atol=1e-5)
        assert entry["learned_name"] == "gate" and entry["shift"] == pytest.approx(
            entry["mass_with"] - entry["mass_without"])
        assert f"gate {entry['learned']:.3f}" in out
    assert "with prior" in out and "shift" in out
    with Image.open(png) as im:
        assert max(im.size) <= 2040 and min(im.size) > 100


def test_show_run_refuses_bad_input_in_one_line(gate_run, tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("x")
    code, _, err = in_process(capsys, "show", str(tmp_path / "notes"), A, B)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "config.json is missing" in err and "(it holds: a.txt)" in err
    code, _, err = in_process(capsys, "show", str(gate_run), A, B, "--layers", "5")
    assert code == 1 and err.strip() == "error: layer 5 is out of range: the model has layers 0-1"
    code, _, err = in_process(capsys, "show", str(gate_run), A, B, "--provider", "wordnet")
    assert code == 2 and "--provider only applies to a prior without a model" in err
    code, _, err = in_process(capsys, "show", A, B, "--heads", "1")
    assert code == 2 and "--heads only applies to a trained run" in err
    long = " ".join(["guitar"] * 60)
    code, out, err = in_process(capsys, "show", str(gate_run), long, B, "--json", "-")
    assert code == 0 and "note: the input has" in err and "showing the first 32" in err
    assert len(json.loads(out)["tokens"]) == 32


# --------------------------------------------------------------------------- priorkit run / sweep
def test_metrics_hold_prior_usage_that_show_reproduces(gate_run, capsys):
    from priorkit.evaluation import sweep as sw
    from priorkit.config import load_config
    from priorkit.training.data import load_data
    from priorkit.training.plan import plan_for_run

    usage = json.loads((gate_run / "metrics.json").read_text())["prior_usage"]
    model = priorkit.load_model(gate_run)
    gates = model.model.base_model.encoder.layer[0].attention.self.prior_gate.detach().tolist()
    assert usage["mode"] == "gate" and usage["layers"] == [0] and usage["split"] == "eval"
    assert usage["learned"]["name"] == "gate"
    assert usage["learned"]["per_layer"]["0"] == pytest.approx(gates, abs=1e-6)
    assert usage["learned"]["mean"] == pytest.approx(float(np.mean(gates)), abs=1e-6)

    # the same measure through the Python API, one example at a time
    pipeline = gate_run.parents[3] / "p.yaml"  # runs/PRIOR/fracF/seedS
    cfg = load_config(str(pipeline), ())
    examples = load_data(cfg)["eval"].examples
    assert usage["examples"] == len(examples) == 8
    total_on = total_off = rows = 0.0
    for e in examples:
        r = compare(model, e["text_a"], e["text_b"])
        fav = favoured_cells(r.with_prior.prior)
        n = int(fav.any(-1).sum())
        total_on += sum(s.mass_with * n for s in r.summary) / len(r.summary)
        total_off += sum(s.mass_without * n for s in r.summary) / len(r.summary)
        rows += n
    assert usage["mass_with"] == pytest.approx(total_on / rows, abs=1e-5)
    assert usage["shift"] == pytest.approx((total_on - total_off) / rows, abs=1e-5)
    assert usage["shift"] != 0

    # printed at the end of priorkit run (every step is up to date, so nothing is retrained)
    code, out, err = in_process(capsys, "run", str(pipeline))
    assert code == 0, err
    assert f"({usage['shift']:+.3f}; uniform" in out and f"learned gate mean {usage['learned']['mean']:.3f}" in out

    # and a column of the sweep table
    rows_ = sw.collect_rows(cfg, [plan_for_run(cfg)])
    cells = sw.aggregate(rows_, "eval_spearman", "paper", ["paper"], [1.0])
    table = sw.markdown_table(cfg, cells)
    assert "prior use" in table and f"{usage['shift']:+.3f} (gate {usage['learned']['mean']:.2f})" in table
