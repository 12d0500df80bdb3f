"""The features channel: a provider's concept matches as B/I tags (and hashed concept ids)
on tokens, added to the input embeddings through a zero-initialised gated projection
(``prior.features``; docs/features.md).

It reads the batch's one tokenisation (``word_ids``) and needs word examples (token
classification); its weights are the ``priorkit_features.*`` entries of the model's own
state dict.
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Mapping, Sequence

from ...errors import PriorkitError
from ..base import CardText, Channel, Context, PredictionWarning, TokenView, register_channel
from .config import FeatureConfig

@register_channel
class FeatureChannel(Channel):
    name = "features"
    batch_keys = ("token_features", "token_concepts")
    config = FeatureConfig

    def __init__(self, builder: Any) -> None:
        #: the :class:`~priorkit.channels.features.FeatureBuilder`
        self.builder = builder
        self.learning_rate = builder.config.learning_rate

    @classmethod
    def from_setting(cls, prior: Any, context: Context) -> "FeatureChannel | None":
        section = cls.section(prior)
        if section is None:
            return None
        config = section.resolved(prior.provider, prior.params)  # provider null: the prior's
        from .builder import FeatureBuilder
        from ...providers.plugins import get_provider

        provider = get_provider(config.provider, **(config.params or {}))
        return cls(FeatureBuilder(provider, config, context.tokenizer, context.max_length))

    @classmethod
    def restore(cls, description: Mapping[str, Any], context: Context) -> "FeatureChannel":
        from .builder import FeatureBuilder
        from ...providers.plugins import get_provider

        config = FeatureConfig.from_dict(description["config"])
        provider = get_provider(config.provider, **(config.params or {}))
        saved_fp = (description.get("provider") or {}).get("fingerprint")
        if saved_fp and provider.fingerprint != saved_fp:
            warnings.warn(f"{context.folder}: the {config.provider} provider's fingerprint is now "
                          f"{provider.fingerprint}, the model was trained with {saved_fp}: its matches, and so "
                          "the token features, may differ from training", PredictionWarning, stacklevel=3)
        builder = FeatureBuilder(provider, config, context.tokenizer, context.max_length)
        if builder.n_features != description["n_features"]:
            raise PriorkitError(f"{context.folder}: {description['n_features']} token features saved, the config "
                                f"gives {builder.n_features}")
        return cls(builder)

    # ---- batches and the model ---------------------------------------------------------
    def batch_tensors(self, examples: Sequence[Mapping[str, Any]], encoding: Any) -> dict[str, Any]:
        if "words" not in examples[0]:
            raise PriorkitError("token features need word examples ({'words': [...]}: token classification)")
        return self.builder.batch_tensors([list(e["words"]) for e in examples], encoding)

    def token_view(self, model: Any, batch: Mapping[str, Any], index: int = 0) -> TokenView | None:
        """Per token: the groups matched there (``B-group`` / ``I-group``) and the size (L2 norm)
        of ``gate * (W f + E c)``, the gated feature the model adds to its embedding there (the
        trained module itself, in eval mode, on the token's own embedding)."""
        import torch

        from .model import feature_module

        module = feature_module(model)
        if module is None or "token_features" not in batch:
            return None
        feats = batch["token_features"][index:index + 1]
        concepts = batch.get("token_concepts")
        concepts = None if concepts is None else concepts[index:index + 1]
        was = module.training
        module.eval()
        try:
            with torch.no_grad():
                ids = batch["input_ids"][index:index + 1].to(module.proj.weight.device)
                emb = model.get_input_embeddings()(ids)
                added = module(emb, feats, concepts) - emb
        finally:
            module.train(was)
        labels = []
        for row in feats[0].tolist():
            tags = [f"{'B' if c % 2 == 0 else 'I'}-{self.builder.groups[c // 2]}" for c, v in enumerate(row) if v]
            labels.append(" ".join(tags))
        return TokenView(labels=labels, label_name="matched groups",
                         values=[float(v) for v in added[0].float().norm(dim=-1).cpu()],
                         value_name="added feature size")

    def attach(self, model: Any) -> None:
        from .model import attach_for

        attach_for(model, self.builder)

    def detach(self, model: Any) -> None:
        from .model import detach_features

        detach_features(model)

    def parameters(self, model: Any) -> list[Any]:
        from .model import feature_parameters

        return feature_parameters(model)

    # ---- describing it ---------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        b = self.builder
        config = b.config.to_dict()
        config["groups"] = list(b.groups)
        return {"config": config, "n_features": b.n_features, "provider": b.provider.describe()}

    @classmethod
    def card(cls, description: Mapping[str, Any], prior: Mapping[str, Any] | None) -> CardText:
        f = summary(description)
        width = f"{f['n_features']} (B/I tags of {', '.join(f['groups'])})"
        if f.get("concept_buckets"):
            width += f", hashed concept ids in {f['concept_buckets']} buckets"
        rows = [("token features", width),
                ("feature provider", f"{f['provider']} v{f['provider_version']}"),
                ("feature parameters", json.dumps(f["params"], sort_keys=True)),
                ("feature fingerprint", f"`{f['fingerprint']}`"),
                ("feature gate", f.get("gate") or "-")]
        if f.get("control"):
            rows.append(("control", f"{f['control']}: matches moved to random spans (no knowledge)"))
        return CardText(rows=rows,
                        summary=(f"token features from the {f['provider']} provider's concept matches (B/I tags of "
                                 f"{', '.join(f['groups'])}) added to its input embeddings"),
                        use=("attaches the token-feature input again (its weights from `model.safetensors`) and "
                             "rebuilds the features from the provider (`priorkit.json`)"),
                        lost="the token features",
                        tags=["token-features", f"prior-{f['provider']}"])


def summary(description: Mapping[str, Any]) -> dict[str, Any]:
    """The features channel's description, flat: provider, params, provider_version,
    fingerprint, groups, n_features, concept_buckets, gate, control."""
    config, provider = description["config"], description.get("provider") or {}
    return {
        "provider": provider.get("name", config.get("provider")),
        "params": provider.get("params", config.get("params")),
        "provider_version": str(provider.get("version")),
        "fingerprint": provider.get("fingerprint"),
        "groups": list(config["groups"]),
        "n_features": description["n_features"],
        "concept_buckets": config.get("concept_buckets", 0),
        "gate": config.get("gate"),
        # the control provider moves the matches to random spans (older folders: features.control)
        "control": "random-spans" if provider.get("name") == "random-spans" else config.get("control"),
    }
