"""Every fenced ``bash`` and ``python`` block of README.md and docs/ runs as written, offline; and
every relative link of README.md, docs/**/*.md and the pipelines' comments resolves (file and
#anchor, by GitHub's heading rules; the last section of this file).

The line before a block may say how it is tested:

* nothing: it runs.  Python blocks run in this process (one fresh namespace
  per block); bash blocks run line by line, each ``priorkit ...`` (or
  ``python -m priorkit``, ``python -c CODE``) command through the real CLI in
  this process, ``VAR=value`` prefixes and ``export`` honoured, ``~`` and
  ``$VAR`` expanded.  A command the runner does not know fails the test: mark
  the block instead.
* ``<!-- docs-test: dry-run -->``: long jobs.  ``priorkit run`` gets
  ``--print-config``, ``sweep`` and ``tune`` get ``--dry-run``; other priorkit
  commands are parsed by the CLI (options, arguments, types) but not run;
  ``python -c`` code and Python blocks are compiled, not run.
* ``<!-- docs-test: skip REASON -->``: not run; the reason is required.

Everything runs in a scratch folder that links the repository's folders
(``pipelines/``, ``examples/``, ``data/`` ...), with ``PRIORKIT_CACHE`` in that
folder: the user's cache is never touched.  The whole file takes well under a
minute once WordNet and MiniLM are on disk.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "providers").glob("*.md")),
        *sorted((ROOT / "docs" / "archive").glob("*.md"))]
_FENCE = re.compile(r"^(\s*)```(bash|python)\s*$")
_MARK = re.compile(r"^\s*<!--\s*docs-test:\s*(dry-run|skip)\s*(.*?)\s*-->\s*$")
DRY_FLAGS = {"run": "--print-config", "sweep": "--dry-run", "tune": "--dry-run"}


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    mode: str  # run | dry-run | skip
    reason: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").split("\n")
        k = 0
        while k < len(lines):
            m = _FENCE.match(lines[k])
            if not m:
                k += 1
                continue
            indent = len(m.group(1))
            end = next(j for j in range(k + 1, len(lines)) if lines[j].strip().startswith("```"))
            mark = _MARK.match(lines[k - 1]) if k else None
            mode, reason = (mark.group(1), mark.group(2)) if mark else ("run", "")
            code = "\n".join(line[indent:] for line in lines[k + 1:end])  # a block inside a list item
            out.append(Block(path, k + 1, m.group(2), mode, reason, code))
            k = end + 1
    return out


BLOCKS = blocks()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A scratch working folder linking the repository's folders; PRIORKIT_CACHE inside it."""
    box = tmp_path_factory.mktemp("docs")
    for name in ("pipelines", "examples", "data", "scripts", "benchmarks", "docs"):
        (box / name).symlink_to(ROOT / name)
    return box


@pytest.fixture()
def docs_env(sandbox, monkeypatch):
    monkeypatch.chdir(sandbox)
    monkeypatch.setenv("PRIORKIT_CACHE", str(sandbox / "cache.duckdb"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # the CLI installs its own
    with warnings.catch_warnings():
        yield sandbox


# ---------------------------------------------------------------------------- running
def run_python(code: str, where: str, dry: bool) -> None:
    compiled = compile(code, where, "exec")
    if not dry:
        exec(compiled, {"__name__": "__docs_test__"})


def priorkit_cli(args: list[str], where: str, dry: bool) -> str:
    from priorkit import cli as cli_module

    sub = next((a for a in args if not a.startswith("-")), None)
    if dry and sub not in DRY_FLAGS:
        parse_only(cli_module.cli, args, where)
        return ""
    if dry:
        args = [*args, DRY_FLAGS[sub]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli_module.main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    assert code == 0, f"{where}: `priorkit {shlex.join(args)}` exited {code}:\n{err.getvalue()[-3000:]}"
    return out.getvalue()


def parse_only(group, args: list[str], where: str) -> None:
    """Let Click parse (and type-check) a command line down to the leaf command, running nothing."""
    import click

    try:
        ctx = group.make_context("priorkit", list(args), resilient_parsing=False)
        rest = [*ctx._protected_args, *ctx.args]
        while isinstance(ctx.command, click.Group) and rest:
            name, cmd, rest = ctx.command.resolve_command(ctx, rest)
            ctx = cmd.make_context(name, list(rest), parent=ctx, resilient_parsing=False)
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args] if isinstance(cmd, click.Group) else []
    except click.ClickException as exc:
        pytest.fail(f"{where}: `priorkit {shlex.join(args)}` does not parse: {exc.format_message()}")


def logical_lines(code: str) -> list[tuple[int, str]]:
    out, buf, start = [], "", 0
    for k, line in enumerate(code.split("\n")):
        if not buf:
            start = k
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    return out


def run_bash(block: Block, dry: bool) -> None:
    env: dict[str, str] = {}
    for offset, line in logical_lines(block.code):
        where = f"{block.file.relative_to(ROOT)}:{block.line + 1 + offset}"
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] == "export":
            words = words[1:]
        assigned = {}
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            k, v = words.pop(0).split("=", 1)
            assigned[k] = v
        if not words:  # `export A=B` or `A=B`: for the rest of the block
            env.update(assigned)
            os.environ.update(assigned)
            continue
        scoped = {**env, **assigned}
        expanded = [_expand(w, scoped) for w in words]
        saved = {k: os.environ.get(k) for k in scoped}
        os.environ.update(scoped)
        try:
            _command(expanded, where, dry)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _expand(word: str, env: dict[str, str]) -> str:
    word = os.path.expanduser(word)
    return re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env.get(m.group(1) or m.group(2),
                                                           os.environ.get(m.group(1) or m.group(2), "")), word)


def _command(words: list[str], where: str, dry: bool) -> None:
    head = os.path.basename(words[0])
    if head == "priorkit":
        priorkit_cli(words[1:], where, dry)
    elif head.startswith("python") and words[1:3] == ["-m", "priorkit"]:
        priorkit_cli(words[3:], where, dry)
    elif head.startswith("python") and len(words) == 3 and words[1] == "-c":
        run_python(words[2], where, dry)
    else:
        pytest.fail(f"{where}: the docs test cannot run `{words[0]}`; mark the block "
                    "<!-- docs-test: skip REASON --> or <!-- docs-test: dry-run -->")


# ---------------------------------------------------------------------------- the tests
def test_every_block_is_found_and_every_skip_has_a_reason():
    assert len(BLOCKS) >= 40
    assert any(b.file.name == "README.md" and b.mode == "run" and b.lang == "bash" for b in BLOCKS)
    for b in BLOCKS:
        assert b.mode != "skip" or len(b.reason) >= 10, f"{b.id}: a skipped block needs a reason"
    for path in DOCS:  # a marker with a typo would silently run the block
        text = path.read_text(encoding="utf-8")
        for line in text.split("\n"):
            if "docs-test" in line and not line.lstrip().startswith("<!-- docs-test: ") and "`" not in line:
                pytest.fail(f"{path.name}: malformed docs-test marker {line!r}")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mode != "skip"], ids=lambda b: b.id)
def test_block_runs_as_written(block, docs_env):
    dry = block.mode == "dry-run"
    if block.lang == "python":
        run_python(block.code, block.id, dry)
    else:
        run_bash(block, dry)


# ---------------------------------------------------------------------------- links
# Every relative link of README.md, docs/**/*.md and the comments of pipelines/*.yaml resolves: the
# file exists, and an #anchor is a heading of the Markdown file it points at, by GitHub's rules.
LINKED_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PIPELINE_FILES = sorted((ROOT / "pipelines").glob("*.yaml"))
_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_CODE_FENCE = re.compile(r"^\s*(```|~~~)")
_MD_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
_BARE_DOC = re.compile(r"(?<![\w/.-])((?:README|docs/[\w./-]*?[\w-])\.md(?:#[\w-]+)?)")


def github_anchor(heading: str) -> str:
    """GitHub's id for a heading's text: links and images give their text, HTML tags and every
    character but letters, digits, '_', '-' and spaces go, spaces become '-', lower case."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fence = [], None
    for k, line in enumerate(text.split("\n"), 1):
        m = _CODE_FENCE.match(line)
        if m and (fence is None or m.group(1) == fence):
            fence = None if fence else m.group(1)
            continue
        if fence is None:
            out.append((k, line))
    return out


def _no_code_spans(line: str) -> str:
    return re.sub(r"(`+)(?:(?!\1).)+\1", lambda c: " " * len(c.group(0)), line)


def heading_anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated heading gets -1, -2 ... as on GitHub; <a id/name> too."""
    seen: dict[str, int] = {}
    anchors = set()
    for _, line in prose_lines(text):
        m = _ATX.match(line)
        if m:
            base = github_anchor(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else f"{base}-{n}")
    anchors |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return anchors


def markdown_links(text: str) -> list[tuple[int, str]]:
    out = []
    for k, line in prose_lines(text):
        line = _no_code_spans(line)
        out += [(k, m.group(1)) for m in _MD_LINK.finditer(line)]
        m = _REF_DEF.match(line)
        if m:
            out.append((k, m.group(1)))
    return out


def yaml_comment_links(text: str) -> list[tuple[int, str, bool]]:
    """(line, target, relative to the repository root?) of a YAML file's comments: Markdown links
    (relative to the file) and bare paths of Markdown files (``docs/x.md#anchor``, from the root)."""
    out = []
    for k, line in enumerate(text.split("\n"), 1):
        m = re.search(r"(?:^|\s)#(.*)$", line)
        if not m:
            continue
        comment = m.group(1)
        for link in _MD_LINK.finditer(comment):
            out.append((k, link.group(1), False))
        out += [(k, t, True) for t in _BARE_DOC.findall(_MD_LINK.sub("", comment))]
    return out


def broken_link(source: Path, target: str, root: Path, anchors_of) -> str | None:
    """Why ``target`` (as written in ``source``) does not resolve, or None."""
    if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
        return None  # http:, mailto: ... are not checked here
    path, _, anchor = target.partition("#")
    dest = (root / path) if path.startswith("/") else (source.parent / path if path else source)
    dest = Path(os.path.normpath(dest))
    if not dest.exists():
        return f"{target}: no such file"
    if ROOT not in (dest, *dest.parents) and root not in (dest, *dest.parents):
        return f"{target}: outside the repository"
    if anchor and dest.suffix == ".md" and anchor not in anchors_of(dest):
        return f"{target}: no heading {anchor!r} in {dest.name}"
    return None


def link_problems(docs: list[Path], yamls: list[Path], root: Path = ROOT) -> tuple[list[str], int]:
    cache: dict[Path, set[str]] = {}

    def anchors_of(path: Path) -> set[str]:
        if path not in cache:
            cache[path] = heading_anchors(path.read_text(encoding="utf-8"))
        return cache[path]

    problems, checked = [], 0
    for doc in docs:
        for line, target in markdown_links(doc.read_text(encoding="utf-8")):
            checked += 1
            why = broken_link(doc, target, root, anchors_of)
            if why:
                problems.append(f"{doc.relative_to(root)}:{line}: {why}")
    for y in yamls:
        for line, target, from_root in yaml_comment_links(y.read_text(encoding="utf-8")):
            checked += 1
            why = broken_link(root / "x" if from_root else y, target, root, anchors_of)
            if why:
                problems.append(f"{y.relative_to(root)}:{line}: {why}")
    return problems, checked


def test_every_relative_link_resolves():
    problems, checked = link_problems(LINKED_DOCS, PIPELINE_FILES)
    assert problems == [], "broken links:\n" + "\n".join(problems)
    assert checked > 500, checked  # the check sees the links (README, docs/, docs/archive/, the pipelines)


def test_the_link_check_catches_a_broken_anchor(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text(
        "# Other\n\n## The run plan's way through `train_run` (issue 31)\n\n## Notes\n\n## Notes\n"
        "```\n# not a heading\n```\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Page\n\n## 2c. Reading the scores: Viterbi, O bias (2026-12-05)\n\n"
        "[ok](other.md#the-run-plans-way-through-train_run-issue-31) [ok](other.md#notes-1) "
        "[ok](#2c-reading-the-scores-viterbi-o-bias-2026-12-05) [ok](other.md) [web](https://x.org/#y)\n"
        "[bad anchor](other.md#notes-2) [no file](gone.md) [bad here](#2c-reading-the-scores)\n"
        "[fenced heading](other.md#not-a-heading) `[code](nowhere.md)`\n"
        "```\n[in a fence](nowhere.md)\n```\n")
    (tmp_path / "pipelines").mkdir()
    yml = tmp_path / "pipelines" / "p.yaml"
    yml.write_text("a: 1   # see docs/page.md#2c-reading-the-scores-viterbi-o-bias-2026-12-05\n"
                   "# stale: docs/page.md#2c-reading and [md](../docs/other.md#gone)\nb: '#not-a-comment.md'\n")
    problems, checked = link_problems([page], [yml], tmp_path)
    assert problems == [
        "docs/page.md:6: other.md#notes-2: no heading 'notes-2' in other.md",
        "docs/page.md:6: gone.md: no such file",
        "docs/page.md:6: #2c-reading-the-scores: no heading '2c-reading-the-scores' in page.md",
        "docs/page.md:7: other.md#not-a-heading: no heading 'not-a-heading' in other.md",
        "pipelines/p.yaml:2: ../docs/other.md#gone: no heading 'gone' in other.md",
        "pipelines/p.yaml:2: docs/page.md#2c-reading: no heading '2c-reading' in page.md",
    ]
    assert checked == 12  # 9 in the page (not the code span, not the fence), 3 in the YAML comments
