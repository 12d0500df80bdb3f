"""The command line's manners: exit statuses, one-line errors, -v/-q, tokenizer advice."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def priorkit(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"}, **kw)


def test_usage_errors_exit_2_and_runtime_errors_exit_1_in_one_line(tmp_path):
    assert priorkit("show", "--no-such-option", "x").returncode == 2
    assert priorkit("-v", "-q", "plugins").returncode == 2
    (tmp_path / "empty").mkdir()
    result = priorkit("predict", str(tmp_path / "empty"), __file__)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'empty' / 'config.json'} is missing: {tmp_path / 'empty'} is not a model folder "
        "(a run folder holds it under model/)"]
    verbose = priorkit("-v", "predict", str(tmp_path / "empty"), __file__)
    assert verbose.returncode == 1 and "Traceback (most recent call last)" in verbose.stderr
    assert verbose.stderr.strip().splitlines()[-1].startswith("error: ")


def test_tokenizer_mistakes_get_one_line_each(tmp_path, minilm_path):
    missing = priorkit("show", "A man.", "A woman.", "--tokenizer", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert f"no folder {tmp_path / 'nope'}" in missing.stderr
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    slow_dir = tmp_path / "slow"
    BertTokenizerLegacy.from_pretrained(str(minilm_path)).save_pretrained(slow_dir)
    slow = priorkit("show", "A man.", "A woman.", "--tokenizer", str(slow_dir))
    assert slow.returncode == 1 and len(slow.stderr.strip().splitlines()) == 1
    assert f"--tokenizer {slow_dir}-fast" in slow.stderr
    # the advice works as written
    advice = slow.stderr.split('python -c "', 1)[1].split('"', 1)[0]
    subprocess.run([sys.executable, "-c", advice], check=True, capture_output=True, timeout=120)
    fixed = priorkit("show", "A man.", "A woman.", "--tokenizer", f"{slow_dir}-fast")
    assert fixed.returncode == 0, fixed.stderr


def test_ctrl_c_exits_130(tmp_path):
    cache = tmp_path / "c.duckdb"
    from priorkit.resources import stsb_path

    proc = subprocess.Popen([sys.executable, "-m", "priorkit", "precompute", str(stsb_path("train")), "--preset",
                             "paper", "--cache", str(cache), "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            # a suite started in the background inherits SIGINT ignored: undo that
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # interrupt the work, not the interpreter's start-up (slow on a loaded machine): the cache file is
    # made before the models load, so wait for it, then a few seconds more
    deadline = time.monotonic() + 120
    while not cache.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    # 130 from priorkit's handler. Seen on a loaded machine: the handler printed its line and Python still
    # ended by the signal (-2 here; a shell shows 130 for both). Either way: that one line, no traceback.
    assert proc.returncode in (130, -signal.SIGINT), err[-2000:]
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted"


def test_ctrl_c_landing_in_a_finaliser_is_not_lost():
    # seen in CI: the SIGINT arrived while a regex object's __del__ ran; Python printed "Exception ignored"
    # and the command ran on to exit 0. The CLI hands such an interrupt back to the main thread.
    # a terminal's Ctrl-C reaches a process whose SIGINT is Python's default handler; a pytest-xdist
    # worker ignores SIGINT and its children inherit that, so the handler is put back first
    script = textwrap.dedent("""
        import signal
        import sys
        import time
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import priorkit.cli as cli
        cli._keep_interrupts_from_finalisers()
        hook = sys.unraisablehook
        cli._keep_interrupts_from_finalisers()  # once per process, however often main() runs
        assert sys.unraisablehook is hook
        class Finaliser:
            def __del__(self):
                raise KeyboardInterrupt
        try:
            Finaliser()
            time.sleep(5)
            print("lost")
        except KeyboardInterrupt:
            print("delivered")
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "delivered", result.stdout + result.stderr
    assert "Exception ignored" not in result.stderr


def test_quiet_keeps_results_and_drops_notices(tmp_path):
    result = priorkit("-q", "data", "fetch", "wordsim")
    assert result.returncode == 0 and result.stderr == "" and "wordsim:" in result.stdout


def test_a_quiet_call_does_not_quiet_the_next_call_in_the_same_process(monkeypatch):
    """``priorkit -q`` sets PRIORKIT_QUIET for its sub-processes; a later call without -q in the same
    process (a notebook, a test run) gets its progress back, while a user's own setting stays."""
    import warnings

    from click.testing import CliRunner

    from priorkit.cli import cli

    monkeypatch.delenv("PRIORKIT_QUIET", raising=False)
    with warnings.catch_warnings():
        assert CliRunner().invoke(cli, ["-q", "plugins"]).exit_code == 0
        assert os.environ.get("PRIORKIT_QUIET") == "1"
        assert CliRunner().invoke(cli, ["plugins"]).exit_code == 0
        assert "PRIORKIT_QUIET" not in os.environ
        monkeypatch.setenv("PRIORKIT_QUIET", "1")  # the user's own
        assert CliRunner().invoke(cli, ["plugins"]).exit_code == 0
        assert os.environ.get("PRIORKIT_QUIET") == "1"
