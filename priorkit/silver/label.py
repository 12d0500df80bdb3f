"""Silver labels from concept matches: each match becomes an entity of the type its group
maps to (the dictionary baseline's rule, :func:`priorkit.features.baseline.group_entities`)."""
from __future__ import annotations

import hashlib
from typing import Mapping, Sequence

from ..checksums import json_sha256
from ..features.baseline import group_entities
from ..provider import PriorProvider


def sentence_digest(words: Sequence[str]) -> str:
    """A sentence's key in the store (its words, joined with a separator no word holds)."""
    return hashlib.blake2b("\x1f".join(words).encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


class Labeller:
    """Words -> BIO tags from ``provider``'s matches and a group -> type map."""

    def __init__(self, provider: PriorProvider, types: Mapping[str, str]) -> None:
        self.provider, self.types = provider, dict(types)

    @property
    def fingerprint(self) -> str:
        """The labels' identity: the provider's fingerprint and the type map (in order)."""
        return "silver-" + json_sha256({"provider": self.provider.fingerprint,
                                        "types": list(self.types.items())}, 16)

    def tags(self, words: Sequence[str]) -> list[str]:
        words = list(words)
        return group_entities(self.provider.matches(words), len(words), self.types)
