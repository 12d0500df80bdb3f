"""A recipe as one folder (docs/tagging.md, "A recipe as one folder"): written and checked.

::

    FOLDER/
      priorkit.json     kind "recipe": the ordered steps, the members (name, sub-folder, share,
                        SHA-256 of their weights), the dictionary (provider, parameters, fingerprint,
                        type map, calibration: the forms dropped and kept, its files), the measured
                        scores with their result files, the run record
      README.md         the model card (:func:`priorkit.inference.card.recipe_card`)
      members/<name>/   each member a complete model folder (loadable alone)
      dictionary/       the files of every ontology the dictionary and the members read, by name

The members' own ``priorkit.json`` stay as trained (their providers name ``source: hpo+mesh``);
loading the recipe points each ontology provider at ``dictionary/`` (its ``data_dir``
parameter, :func:`with_data_dir`), and the same files give the same fingerprints, so the folder
needs nothing else.  :func:`write_recipe` writes it (the exporter, :mod:`priorkit.evaluation.export`,
decides what goes in).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..checksums import file_sha256
from ..errors import PriorkitError
from . import manifest as mf

KIND = "recipe"
#: 1: the first recipe folders (issue 45)
RECIPE_FORMAT = 1
MEMBERS_DIR = "members"
DICTIONARY_DIR = "dictionary"
#: the providers whose data a recipe folder carries (through their ``data_dir`` parameter)
FILE_PROVIDERS = ("ontology",)


def is_recipe(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder whose priorkit.json says kind ``recipe``."""
    p = Path(path).expanduser() / mf.PRIORKIT_JSON
    if not p.is_file():
        return False
    try:
        return json.loads(p.read_text()).get("kind") == KIND
    except (OSError, ValueError, AttributeError):
        return False


def provider_sections(obj: Any) -> Iterator[dict]:
    """Every ``{"provider" or "name": <a file provider>, "params": {...}}`` mapping inside ``obj``
    (a member's channel descriptions and prior, a calibrated provider's inner one, ...)."""
    if isinstance(obj, dict):
        if (obj.get("provider") in FILE_PROVIDERS or obj.get("name") in FILE_PROVIDERS) \
                and isinstance(obj.get("params"), dict):
            yield obj
        for v in obj.values():
            yield from provider_sections(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from provider_sections(v)


def built_providers(info: Mapping[str, Any]) -> list[dict]:
    """The provider sections of a member's priorkit.json that loading builds providers from (the
    prior's spec, each channel's config; not the providers' own descriptions): those of file
    providers, nested ones included."""
    built = [(info.get("prior") or {}).get("spec")]
    built += [c.get("config") for c in (info.get("channels") or {}).values() if isinstance(c, dict)]
    return list(provider_sections([b for b in built if b]))


def with_data_dir(info: Mapping[str, Any], data_dir: Path) -> dict:
    """A copy of a member's priorkit.json content whose ontology providers read their files from
    ``data_dir`` (the recipe's ``dictionary/``)."""
    out = json.loads(json.dumps(info))
    for section in built_providers(out):
        section["params"]["data_dir"] = str(data_dir)
    return out


def _provider_files(name: str, params: Mapping[str, Any]) -> list[Path]:
    from ..providers.plugins import get_provider

    provider = get_provider(name, **{k: v for k, v in params.items() if k != "data_dir"})
    if not hasattr(provider, "data_files"):
        raise PriorkitError(f"recipe: provider {name!r} cannot name its data files, so the folder could not "
                            "carry them; use the ontology provider")
    return list(provider.data_files())


def copy_data_files(sections: Sequence[tuple[str, Mapping[str, Any]]], out: Path) -> list[dict]:
    """Copy the files each ``(provider, params)`` reads into ``out`` under their names; the list of
    ``{"name", "sha256", "bytes"}``.  Two different files of one name stop the export."""
    out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, tuple[str, Path]] = {}
    for name, params in sections:
        for path in _provider_files(name, params):
            if path.is_dir():
                raise PriorkitError(f"recipe: {path} is a folder (UMLS RRF); a recipe carries single ontology files")
            digest = file_sha256(path)
            if path.name in seen:
                if seen[path.name][0] != digest:
                    raise PriorkitError(f"recipe: two different files are named {path.name} ({seen[path.name][1]} "
                                        f"and {path}); rename one so that the folder can hold both")
                continue
            seen[path.name] = (digest, path)
            shutil.copyfile(path, out / path.name)
    return [{"name": n, "sha256": d, "bytes": (out / n).stat().st_size} for n, (d, _) in sorted(seen.items())]


def weights_file(model_dir: Path) -> Path:
    found = next((model_dir / w for w in mf.WEIGHTS if (model_dir / w).exists()), None)
    if found is None:
        raise PriorkitError(f"{model_dir}: no weights ({', '.join(mf.WEIGHTS)})")
    return found


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def write_recipe(out: str | os.PathLike, *, members: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]],
                 labels: Sequence[str], dictionary: Mapping[str, Any] | None, scores: Mapping[str, Any] | None,
                 result_files: Mapping[str, str], run: Mapping[str, Any], force: bool = False) -> dict:
    """Write a recipe folder at ``out`` (module doc); returns its priorkit.json content.

    ``members``: ``{"name", "model_dir", "share"}`` in the mix's order; ``steps``: the steps as data
    (:func:`priorkit.decode.steps.to_data`), checked on load; ``dictionary``: ``{"provider",
    "params", "types", "calibration"}`` or None.  The folder is written beside ``out`` and moved
    into place whole; an existing ``out`` is replaced only with ``force``."""
    from .. import __version__
    from .card import recipe_card

    out = Path(out).expanduser()
    if out.exists() and not force:
        raise PriorkitError(f"{out} exists; pass --force to replace it (or another --out)")
    tmp = out.with_name(f".{out.name}.writing")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / MEMBERS_DIR).mkdir(parents=True)
    listed = []
    sections: list[tuple[str, Mapping[str, Any]]] = []
    for m in members:
        src = Path(m["model_dir"])
        dest = tmp / MEMBERS_DIR / m["name"]
        shutil.copytree(src, dest)
        info = json.loads((src / mf.PRIORKIT_JSON).read_text())
        sections += [(s.get("provider") if s.get("provider") in FILE_PROVIDERS else s["name"], s["params"])
                     for s in built_providers(info)]
        weights = weights_file(dest)
        listed.append({"name": m["name"], "folder": f"{MEMBERS_DIR}/{m['name']}", "share": m.get("share"),
                       "weights": weights.name, "sha256": file_sha256(weights), "trained_in": str(src)})
    if dictionary is not None:
        sections.append((dictionary["provider"], dictionary["params"]))
    files = copy_data_files(sections, tmp / DICTIONARY_DIR) if sections else []
    described = None if dictionary is None else _dictionary_record(dictionary, tmp / DICTIONARY_DIR)
    info = {
        "format": RECIPE_FORMAT, "kind": KIND, "priorkit_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "task": {"type": "token-classification", "labels": list(labels)}, "inputs": "words",
        "steps": [dict(s) for s in steps], "members": listed, "dictionary": described,
        "data": {"folder": DICTIONARY_DIR, "files": files} if files else None,
        "scores": dict(scores) if scores else None, "result_files": dict(result_files),
        "run": dict(run),
    }
    (tmp / mf.PRIORKIT_JSON).write_text(json.dumps(info, indent=2) + "\n")
    info["bytes"] = folder_bytes(tmp)
    (tmp / mf.PRIORKIT_JSON).write_text(json.dumps(info, indent=2) + "\n")
    (tmp / mf.CARD).write_text(recipe_card(info))
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    return info


def _dictionary_record(dictionary: Mapping[str, Any], data_dir: Path) -> dict:
    """The dictionary's entry: provider, parameters, fingerprint (the same from the folder's files as
    from where they came: checked), type map, calibration."""
    from ..providers.plugins import get_provider

    params = {k: v for k, v in dictionary["params"].items() if k != "data_dir"}
    original = get_provider(dictionary["provider"], **params)
    carried = get_provider(dictionary["provider"], **params, data_dir=str(data_dir))
    if carried.fingerprint != original.fingerprint:
        raise PriorkitError(f"recipe: the dictionary read from the folder has fingerprint {carried.fingerprint}, "
                            f"from its sources {original.fingerprint}; the copied files differ")
    return {"provider": dictionary["provider"], "params": params, "fingerprint": original.fingerprint,
            "version": str(original.version), "types": dict(dictionary["types"]),
            "calibration": dictionary.get("calibration"),
            **({"use": dictionary["use"]} if dictionary.get("use") else {})}
