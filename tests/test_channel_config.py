"""Typed configuration per channel: every channel declares the dataclass of its section
(``Channel.config``, in the ``config.py`` next to it); the pipeline schema finds it through
the channel registry and checks a section against it with file:line, a plug-in's channel
(tests/support/plugins/match_weight_channel.py) like a built-in one; the channel interface
names no channel."""
from __future__ import annotations

import dataclasses
import re
import shutil
import textwrap
import typing
from pathlib import Path

import pytest

import priorkit
from priorkit.channels import CHANNELS
from priorkit.config import ConfigError, PriorConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "tests" / "support" / "plugins" / "match_weight_channel.py"


def test_the_built_in_channels_declare_their_sections_and_the_schema_types_them_so():
    from priorkit.channels.attention.config import AttentionConfig
    from priorkit.channels.features.config import FeatureConfig

    assert CHANNELS["attention"].config is AttentionConfig and CHANNELS["features"].config is FeatureConfig
    hints = typing.get_type_hints(PriorConfig)
    own = [n for n in CHANNELS if n in {f.name for f in dataclasses.fields(PriorConfig)}]
    assert own == ["attention", "features"]
    for name in own:  # a section of its own is typed as its channel's config, found in the registry
        assert typing.get_args(hints[name]) == (CHANNELS[name].config, type(None)), name


def test_the_channel_interface_names_no_channel():
    source = (ROOT / "priorkit" / "channels" / "base.py").read_text()
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"""["'](attention|features)["']""", code)


@pytest.fixture
def plugin_env(tmp_path, monkeypatch):
    folder = tmp_path / "plugins"
    folder.mkdir(mode=0o755)
    shutil.copyfile(PLUGIN, folder / PLUGIN.name)
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(folder))
    return folder


def _pipeline(tmp_path, section: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent("""\
        name: p
        task: {type: token-classification}
        data:
          train: {source: bc5cdr, split: train, limit: 8}
          eval: {source: bc5cdr, split: devel, limit: 8}
        prior:
          provider: ontology
          params: {source: hpo}
          attention: null
          channels:
        """) + textwrap.indent(section, "    "))
    return path


def test_a_plugin_channels_section_is_its_declared_dataclass(tmp_path, plugin_env):
    cfg = load_config(_pipeline(tmp_path, "match_weight: {weight: 3.0}\n"))
    section = cfg.prior.channels["match_weight"]
    assert type(section).__name__ == "MatchWeightConfig"
    assert (section.weight, section.provider, section.params) == (3.0, None, None)  # defaults filled in
    assert CHANNELS["match_weight"].section(cfg.prior) is section
    # a sweep setting's section too (its prior re-read from the merged mapping)
    from priorkit.config import prior_settings

    cfg = load_config(_pipeline(tmp_path, "match_weight: {}\n"))
    assert [type(p.channels["match_weight"]).__name__ for p in prior_settings(cfg).values() if p] == ["MatchWeightConfig"]
    assert cfg.prior.channels["match_weight"].weight == 2.0


@pytest.mark.parametrize("section, line, field, words", [
    ("match_weight: {wieght: 3.0}\n", 11, "prior.channels.match_weight.wieght",
     "unknown field; did you mean 'prior.channels.match_weight.weight'?"),
    ("match_weight:\n  weight: fast\n", 12, "prior.channels.match_weight.weight", "expected a number, got 'fast'"),
    ("match_weight: {weight: -1}\n", 11, "prior.channels.match_weight.weight", "must be positive, got -1.0"),
])
def test_a_bad_plugin_section_names_the_file_line_and_field(tmp_path, plugin_env, section, line, field, words):
    path = _pipeline(tmp_path, section)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}:{line}: {field}: ") and words in str(info.value), str(info.value)


def test_a_channel_without_a_config_keeps_its_mapping_and_built_ins_are_refused_there(tmp_path):
    from priorkit.channels import Channel, register_channel
    from priorkit.channels.base import typed_section

    @register_channel
    class Untyped(Channel):
        name = "h4_untyped"

    try:
        cfg = load_config(_pipeline(tmp_path, "h4_untyped: {anything: 1}\n"))
        assert cfg.prior.channels["h4_untyped"] == {"anything": 1}
        assert Untyped.section(cfg.prior) == {"anything": 1}
        with pytest.raises(ConfigError, match=r"p.yaml:11: prior.channels.features: is not a registered channel .*"
                                              r"attention and features have sections of their own"):
            load_config(_pipeline(tmp_path, "features: {}\n"))
    finally:
        CHANNELS.pop("h4_untyped", None)
    # outside a pipeline file, the section is still made its channel's dataclass
    with pytest.raises(priorkit.PriorkitError, match=r"unknown field\(s\) \['layer'\] of the attention channel"):
        typed_section(CHANNELS["attention"], {"layer": [0]})
    assert typed_section(CHANNELS["attention"], {"mode": "bias"}).mode == "bias"


def test_every_shipped_pipeline_still_loads():
    for path in sorted((ROOT / "pipelines").glob("*.yaml")):
        load_config(path)


def test_a_run_hands_its_channels_plain_data_not_its_prior_setting(tmp_path, plugin_env):
    """training/wiring.channel_setting: the PriorSpec and each section as a mapping; a channel types
    its own (so no part of the run's plan reaches channels/, benchmarks/plan_walk.py)."""
    from priorkit.channels import ChannelSetting
    from priorkit.providers.spec import PriorSpec
    from priorkit.training.wiring import channel_setting

    path = _pipeline(tmp_path, "match_weight: {weight: 3.0}\n").read_text().replace(
        "  attention: null\n", "  attention: null\n  features: {dropout: 0.2}\n")
    (tmp_path / "q.yaml").write_text(path)
    prior = load_config(tmp_path / "q.yaml").prior
    setting = channel_setting(prior)
    assert isinstance(setting, ChannelSetting) and type(setting.spec()) is PriorSpec
    assert setting.spec() == prior.spec() and (setting.provider, setting.params) == ("ontology", {"source": "hpo"})
    assert setting.own == {"attention": None, "features": dataclasses.asdict(prior.features)}
    assert setting.listed == {"match_weight": {"weight": 3.0, "provider": None, "params": None}}
    features = CHANNELS["features"].section(setting)
    assert features == prior.features and features is not prior.features  # the same values, typed afresh
    assert CHANNELS["attention"].section(setting) is None
    assert CHANNELS["match_weight"].section(setting).weight == 3.0
