"""Option helpers the prior commands share (``show``, ``cache``): ``--param`` values, the
``--provider`` usage error, the ``--tokenizer`` source."""
from __future__ import annotations

import json

import click


def parse_params(params: tuple[str, ...]) -> dict:
    """``key=value`` strings -> dict (values parsed as JSON when possible)."""
    out = {}
    for item in params:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not key=value", param_hint="--param")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def provider_option(build):
    """Build the ``--provider NAME --param k=v`` provider; an unknown name is a usage error
    (exit 2) that lists the known ones."""
    from ..errors import UnknownProviderError

    try:
        return build()
    except UnknownProviderError as exc:
        raise click.BadParameter(str(exc), param_hint="--provider") from None


def tokenizer_source(value: str | None) -> str:
    """``--tokenizer``: a local folder or a Hub id already in the local cache, checked in one line."""
    import os
    from pathlib import Path

    if value is None:
        from ..resources import minilm_path

        return str(minilm_path())
    path = Path(value).expanduser()
    if path.is_dir():
        if not any((path / f).exists() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt")):
            raise click.BadParameter(f"{path} holds no tokenizer files (tokenizer.json, tokenizer_config.json)",
                                     param_hint="--tokenizer")
        return str(path)
    if path.exists():
        raise click.BadParameter(f"{path} is a file; pass the folder that holds tokenizer.json",
                                 param_hint="--tokenizer")
    looks_like_path = value.startswith((".", "/", "~")) or value.count("/") > 1 or os.sep != "/" and os.sep in value
    if looks_like_path:
        raise click.BadParameter(f"no folder {value}; pass a tokenizer folder or a Hugging Face Hub id",
                                 param_hint="--tokenizer")
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        from transformers.utils.hub import cached_file

        found = cached_file(value, "tokenizer_config.json", local_files_only=True,
                            _raise_exceptions_for_missing_entries=False,
                            _raise_exceptions_for_connection_errors=False)
        if found is None:
            raise click.BadParameter(
                f"{value} is neither a local folder nor in the Hugging Face cache, and HF_HUB_OFFLINE is set; "
                "pass a local tokenizer folder (the default is the fetched MiniLM)", param_hint="--tokenizer")
    return value
