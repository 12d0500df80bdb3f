"""Fingerprints (cache keys) of every built-in provider, as JSON.

    .venv/bin/python benchmarks/provider_fingerprints.py > fingerprints.json

Run it before and after a change to the providers or to how they checksum
their data, and compare: equal fingerprints mean every cached value stays
valid.  Covers each provider with its default parameters plus every
measure of wordnet and ontology and the static-vector embedding back-end.
"""
from __future__ import annotations

import json
import warnings

CONFIGS = [
    ("wordnet", {}),
    *[("wordnet", {"measure": m}) for m in ("path", "wup", "lch", "res", "jcn", "lin")],
    ("conceptnet", {}),
    ("conceptnet", {"hops": 1}),
    ("ontology", {}),
    *[("ontology", {"measure": m}) for m in ("resnik", "path", "wup")],
    ("embedding", {}),
    ("embedding", {"vectors": "glove"}),
    ("combine", {"providers": ["wordnet", "conceptnet"]}),
    ("combine", {"providers": ["ontology", "embedding"], "how": "weighted", "weights": [0.5, 0.5]}),
]


def main() -> None:
    import priorkit

    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, params in CONFIGS:
            key = name + json.dumps(params, sort_keys=True)
            out[key] = priorkit.get_provider(name, **params).fingerprint
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
