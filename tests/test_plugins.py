"""The plug-in system: entry points, plug-in folders, validation, errors."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import priorkit
from priorkit.errors import PluginError, ProviderOutputError, UnknownProviderError
from priorkit.providers.plugins import PriorkitPluginManager, get_plugin_manager

ROOT = Path(__file__).resolve().parent.parent
BUILTIN = {"wordnet", "conceptnet", "ontology", "embedding", "combine"}


def write_plugin(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


GOOD = """
import numpy as np
import priorkit

class Lengths(priorkit.PriorProvider):
    name = "lengths"
    def __init__(self, scale=1.0):
        super().__init__(scale=scale)
        self.scale = scale
    def compute(self, left, right):
        a = np.array([len(w) for w in left], dtype=np.float32)[:, None]
        b = np.array([len(w) for w in right], dtype=np.float32)[None, :]
        return np.minimum(a, b) / np.maximum(a, b) * self.scale

@priorkit.hookimpl
def register_prior_providers(register):
    register("lengths", Lengths, description="length ratio")
"""


def test_builtin_providers_come_through_entry_points():
    pm = PriorkitPluginManager()
    infos = {p.name: p for p in pm.plugins()}
    assert BUILTIN <= set(infos)
    for name in BUILTIN:
        assert "entry point priorkit_plugins." in infos[name].source
    assert "wordnet" in pm.providers and pm.providers["wordnet"].plugin == "wordnet"


def test_plugin_folder_provider_is_usable(tmp_path):
    write_plugin(tmp_path, "lengths_plugin", GOOD)
    pm = PriorkitPluginManager(plugins_dir=tmp_path)
    p = pm.get_provider("lengths", scale=0.5)
    out = p.similarity(["ab", "abcd", "ab"], ["abcd"])
    np.testing.assert_allclose(out[:, 0], [0.25, 0.5, 0.25])
    assert out.dtype == np.float32
    assert p.plugin == "lengths_plugin"
    info = {i.name: i for i in pm.plugins()}["lengths_plugin"]
    assert info.hooks == ["register_prior_providers"] and info.providers == ["lengths"]
    assert info.source == str(tmp_path / "lengths_plugin.py")


def test_env_var_folder_and_cli_listing(tmp_path, monkeypatch):
    write_plugin(tmp_path, "lengths_plugin", GOOD)
    from priorkit.cli import cli

    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", "")  # the CLI extends it; restored after the test

    res = CliRunner().invoke(cli, ["--plugins-dir", str(tmp_path), "plugins", "--json"])
    assert res.exit_code == 0, res.output
    names = {p["name"]: p for p in json.loads(res.output)}
    assert names["lengths_plugin"]["providers"] == ["lengths"]
    assert BUILTIN <= set(names)
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", str(tmp_path))
    assert "lengths" in {e.name for e in priorkit.list_providers()}


def test_load_plugins_env_restricts_installed_plugins(monkeypatch):
    monkeypatch.setenv("PRIORKIT_LOAD_PLUGINS", "wordnet")
    assert [p.name for p in PriorkitPluginManager().plugins()] == ["wordnet"]
    monkeypatch.setenv("PRIORKIT_LOAD_PLUGINS", "")
    assert PriorkitPluginManager().plugins() == []


def test_hook_typo_is_a_broken_plugin(tmp_path):
    write_plugin(tmp_path, "typo", """
        import priorkit
        @priorkit.hookimpl
        def register_prior_provider(register):   # missing "s"
            pass
    """)
    write_plugin(tmp_path, "lengths_plugin", GOOD)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    (typo,) = pm.broken()
    assert typo.name == "typo" and re.search(r"register_prior_provider\b.*register_prior_providers", typo.error)
    assert pm.get_provider("lengths").similarity(["ab"], ["ab"])[0, 0] == 1.0  # the others work
    with pytest.raises(PluginError, match=r"typo.*register_prior_providers"):
        PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False, strict=True)


def test_import_error_names_the_file(tmp_path):
    path = write_plugin(tmp_path, "broken", "import does_not_exist_anywhere\n")
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    (info,) = pm.plugins()
    assert info.name == "broken" and str(path) in info.error and "does_not_exist_anywhere" in info.error
    with pytest.raises(PluginError, match=str(path)):
        PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False, strict=True)


def test_duplicate_provider_names_both_plugins(tmp_path):
    write_plugin(tmp_path, "first", GOOD)
    write_plugin(tmp_path, "second", GOOD)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    with pytest.raises(PluginError, match=r"'lengths'.*'first'.*'second'"):
        pm.get_provider("lengths")
    with pytest.raises(PluginError, match=r"'lengths'.*'first'.*'second'"):
        PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False, strict=True)


def test_unknown_provider_lists_available():
    with pytest.raises(UnknownProviderError) as exc:
        priorkit.get_provider("wordnett")
    msg = str(exc.value)
    assert "wordnett" in msg and "wordnet" in msg and "Did you mean" in msg and "priorkit plugins" in msg


@pytest.mark.parametrize(
    "body, match",
    [
        ("return np.zeros((len(left), len(right) + 1), dtype=np.float32)", "shape"),
        ("return np.full((len(left), len(right)), 1.5, dtype=np.float32)", "outside"),
        ("return np.full((len(left), len(right)), np.nan, dtype=np.float32)", "NaN"),
        ("return np.ones((len(left), len(right)), dtype=np.int64)", "dtype"),
        ("return [[1.0] * len(right)] * len(left)", "list"),
        ("return np.full((len(left), len(right)), np.inf, dtype=np.float32)", "outside"),
    ],
)
def test_bad_provider_output_names_the_plugin(tmp_path, body, match):
    write_plugin(tmp_path, "faulty", f"""
        import numpy as np
        import priorkit
        class Faulty(priorkit.PriorProvider):
            name = "faulty"
            allows_nan = False
            def compute(self, left, right):
                {body}
        @priorkit.hookimpl
        def register_prior_providers(register):
            register("faulty", Faulty)
    """)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    with pytest.raises(ProviderOutputError, match=match) as exc:
        pm.get_provider("faulty").similarity(["a", "b"], ["c"])
    assert "'faulty'" in str(exc.value) and "plug-in" in str(exc.value)


def test_factory_must_return_a_provider(tmp_path):
    write_plugin(tmp_path, "notprov", """
        import priorkit
        @priorkit.hookimpl
        def register_prior_providers(register):
            register("notprov", lambda **kw: object())
    """)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    with pytest.raises(PluginError, match="not a priorkit.PriorProvider"):
        pm.get_provider("notprov")


def test_overriding_similarity_is_refused():
    with pytest.raises(TypeError, match="compute"):
        class Sneaky(priorkit.PriorProvider):  # noqa: F841
            def similarity(self, left, right):
                return None


def test_fingerprint_is_stable_and_parameter_sensitive(tmp_path):
    write_plugin(tmp_path, "lengths_plugin", GOOD)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    a, b, c = (pm.get_provider("lengths", scale=s) for s in (1.0, 1.0, 0.5))
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.fingerprint.startswith("lengths-")


def test_similarity_dedupes_and_lazy_loads(tmp_path):
    write_plugin(tmp_path, "counting", """
        import numpy as np
        import priorkit
        class Counting(priorkit.PriorProvider):
            name = "counting"
            loads = 0
            calls = []
            def load(self):
                type(self).loads += 1
            def compute(self, left, right):
                type(self).calls.append((list(left), list(right)))
                return np.full((len(left), len(right)), 0.5, dtype=np.float32)
        @priorkit.hookimpl
        def register_prior_providers(register):
            register("counting", Counting)
    """)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    p = pm.get_provider("counting")
    cls = type(p)
    assert cls.loads == 0  # construction is cheap
    out = p.similarity(["x", "y", "x"], ["z", "z"])
    p.similarity(["x"], ["z"])
    assert out.shape == (3, 2) and cls.loads == 1
    assert cls.calls[0] == (["x", "y"], ["z"])
    with pytest.raises(TypeError, match="list of words"):
        p.similarity("x", ["z"])


@pytest.mark.slow
def test_example_package_installs_and_loads_through_entry_point():
    """docs/plugins.md's example package, pip-installed for real, then uninstalled."""
    pkg = ROOT / "examples" / "priorkit-charsim"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "--no-deps", "--no-build-isolation", str(pkg)], check=True)
    try:
        # a fresh interpreter: exactly what a user's process sees
        code = ("import priorkit, json; p = priorkit.get_provider('charsim', n=3); "
                "info = [i for i in priorkit.list_plugins() if i.name == 'charsim'][0]; "
                "print(json.dumps({'v': p.similarity(['hypotension'], ['hypotensive', 'cat']).tolist(), "
                "'source': info.source, 'version': info.version}))")
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert "priorkit-charsim 0.2.0" in got["source"] and got["version"] == "0.2.0"
        related, unrelated = got["v"][0]
        assert 0.4 < related < 1.0 and unrelated == 0.0
    finally:
        subprocess.run([*pip, "uninstall", "-y", "priorkit-charsim"], check=True)
    get_plugin_manager(reload=True)
    assert "charsim" not in {e.name for e in priorkit.list_providers()}


def test_every_package_is_listed_in_pyproject():
    """A wheel only holds the packages pyproject lists; a new sub-package must be added there."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "priorkit").rglob("__init__.py")}
    found |= {".".join(("priorkit_plugins", *p.parent.relative_to(ROOT / "plugins").parts))
              for p in (ROOT / "plugins").rglob("__init__.py")}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages"
    assert "priorkit_plugins" in listed and "priorkit_plugins.ontology.readers" in listed


def test_pair_similarity_default_and_validation(tmp_path):
    write_plugin(tmp_path, "lengths_plugin", GOOD)
    write_plugin(tmp_path, "badpairs", """
        import numpy as np
        import priorkit
        class BadPairs(priorkit.PriorProvider):
            name = "badpairs"
            def compute(self, left, right):
                return np.full((len(left), len(right)), 0.5, dtype=np.float32)
            def compute_pairs(self, left, right):
                return np.full(len(left) + 1, 0.5, dtype=np.float32)   # one too many
        @priorkit.hookimpl
        def register_prior_providers(register):
            register("badpairs", BadPairs)
    """)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    p = pm.get_provider("lengths")
    left, right = ["ab", "abcd", "ab", "x"], ["abcd", "ab", "abcd", "xyz"]
    got = p.pair_similarity(left, right)
    want = np.array([p.similarity([a], [b])[0, 0] for a, b in zip(left, right)])
    np.testing.assert_allclose(got, want)
    with pytest.raises(ValueError, match="pair k"):
        p.pair_similarity(["a"], ["b", "c"])
    with pytest.raises(ProviderOutputError, match=r"'badpairs'.*word pairs"):
        pm.get_provider("badpairs").pair_similarity(["a", "b"], ["c", "d"])


# ---- broken plug-ins, plug-in folders, code in the fingerprint (issues 11 and 14) --------
MARKER_PLUGIN = """
import pathlib
pathlib.Path({marker!r}).write_text("plug-in code ran")
""" + GOOD

COMMAND_PLUGIN = """
import click
import priorkit

@priorkit.hookimpl
def register_commands(cli):
    @cli.command("hello")
    @click.argument("who")
    def hello(who):
        click.echo(f"hello {who} from a folder plug-in")
"""


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real `priorkit` command line in a fresh process."""
    full = {**os.environ, "HF_HUB_OFFLINE": "1"}
    full.pop("PRIORKIT_PLUGINS_DIR", None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "priorkit", *args], capture_output=True, text=True,
                          env=full, timeout=300)


def test_plugins_dir_option_and_env_register_commands_alike(tmp_path):
    write_plugin(tmp_path, "greeter", COMMAND_PLUGIN)
    by_option = run_cli("--plugins-dir", str(tmp_path), "hello", "Ada")
    assert by_option.returncode == 0, by_option.stderr
    assert by_option.stdout.strip() == "hello Ada from a folder plug-in"
    by_env = run_cli("hello", "Ada", env={"PRIORKIT_PLUGINS_DIR": str(tmp_path)})
    assert by_env.returncode == 0, by_env.stderr
    assert by_env.stdout == by_option.stdout
    assert run_cli("hello", "Ada").returncode != 0  # without the folder there is no such command


def test_broken_plugin_is_listed_and_stops_nothing(tmp_path):
    write_plugin(tmp_path, "broken", "import does_not_exist_anywhere\n")
    write_plugin(tmp_path, "lengths_plugin", GOOD)
    env = {"PRIORKIT_PLUGINS_DIR": str(tmp_path)}
    version = run_cli("--version", env=env)
    assert version.returncode == 0 and "version" in version.stdout, version.stderr
    listed = run_cli("plugins", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    infos = {p["name"]: p for p in json.loads(listed.stdout)}
    assert "does_not_exist_anywhere" in infos["broken"]["error"] and infos["broken"]["providers"] == []
    assert infos["lengths_plugin"]["error"] is None and BUILTIN <= set(infos)
    table = run_cli("plugins", env=env)
    assert table.returncode == 0 and "broken" in table.stdout and "1 plug-in(s) broken" in table.stderr
    providers = run_cli("providers", "--json", env=env)
    assert providers.returncode == 0 and "lengths" in {p["name"] for p in json.loads(providers.stdout)}
    # asking for a provider of the broken plug-in names it and its import error
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    with pytest.raises(PluginError, match=r"'broken'.*broken.*ModuleNotFoundError.*does_not_exist_anywhere"):
        pm.get_provider("broken")
    with pytest.raises(UnknownProviderError, match=r"failed to load.*'broken'.*does_not_exist_anywhere"):
        pm.get_provider("something_else")


def test_broken_entry_point_plugin_is_listed(tmp_path, monkeypatch):
    """A real installed distribution (a .dist-info on sys.path) whose entry point fails to import."""
    dist = tmp_path / "brokenpk-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenpk\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[priorkit]\nbrokenpk = brokenpk_mod\n")
    (tmp_path / "brokenpk_mod.py").write_text("raise RuntimeError('this plug-in is broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = PriorkitPluginManager()
    info = {p.name: p for p in pm.plugins()}["brokenpk"]
    assert "brokenpk 0.1" in info.source and "broken on purpose" in info.error
    assert "PRIORKIT_LOAD_PLUGINS" in info.error
    assert BUILTIN <= set(pm.providers)  # the built-ins still work
    with pytest.raises(PluginError, match=r"'brokenpk'.*broken on purpose"):
        pm.get_provider("brokenpk")


@pytest.mark.parametrize("what", ["folder", "file"])
def test_world_writable_plugin_folder_is_refused_and_its_code_never_runs(tmp_path, what):
    folder = tmp_path / "shared_plugins"
    marker = tmp_path / "PLUGIN-CODE-RAN"
    path = write_plugin(folder, "planted", MARKER_PLUGIN.format(marker=str(marker)))
    os.chmod(folder if what == "folder" else path, 0o777 if what == "folder" else 0o666)
    from priorkit.resources import SharedFolderWarning

    with pytest.warns(SharedFolderWarning, match="chmod go-w"):
        pm = PriorkitPluginManager(plugins_dir=folder, load_entry_points=False)
    assert not marker.exists()
    (info,) = pm.plugins()
    assert info.error.startswith("refused") and "writable by every account" in info.error
    assert f"chmod go-w {folder if what == 'folder' else path}" in info.error
    with pytest.raises(UnknownProviderError, match="refused"):
        pm.get_provider("lengths")
    # the CLI too: listed as refused, the code did not run, other commands work
    listed = run_cli("plugins", "--json", env={"PRIORKIT_PLUGINS_DIR": str(folder)})
    assert listed.returncode == 0, listed.stderr
    assert "refused" in {p["name"]: p for p in json.loads(listed.stdout)}["planted"]["error"]
    assert not marker.exists()
    os.chmod(folder if what == "folder" else path, 0o755 if what == "folder" else 0o644)  # the fix
    assert "lengths" in PriorkitPluginManager(plugins_dir=folder, load_entry_points=False).providers
    assert marker.exists()  # now it was imported


def test_sticky_world_writable_folder_is_refused_too(tmp_path):
    """/tmp-like (1777): the sticky bit stops deletions, not new files planted by others."""
    folder = tmp_path / "sticky"
    marker = tmp_path / "RAN"
    write_plugin(folder, "planted", MARKER_PLUGIN.format(marker=str(marker)))
    os.chmod(folder, 0o1777)
    with pytest.warns(UserWarning, match="sticky"):
        pm = PriorkitPluginManager(plugins_dir=folder, load_entry_points=False)
    assert not marker.exists() and pm.broken()


def test_folder_plugin_fingerprint_follows_its_source(tmp_path):
    path = write_plugin(tmp_path, "lengths_plugin", GOOD)
    fp1 = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False).get_provider("lengths").fingerprint
    fp1_again = PriorkitPluginManager(plugins_dir=tmp_path,
                                      load_entry_points=False).get_provider("lengths").fingerprint
    path.write_text(path.read_text().replace("* self.scale", "* self.scale * 1.0  # edited"))
    fp2 = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False).get_provider("lengths").fingerprint
    assert fp1 == fp1_again and fp2 != fp1
    # a combination of it changes with it
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    from priorkit.checksums import data_sha256

    assert pm.get_provider("lengths").code_checksum == data_sha256(path.read_bytes())


def test_builtin_fingerprints_carry_no_code_checksum():
    p = priorkit.get_provider("wordnet")
    assert p.code_checksum == "" and p.fingerprint.startswith("wordnet-")


CHECKED = """
import numpy as np
import priorkit

class Scaled(priorkit.PriorProvider):
    name = "scaled"
    def __init__(self, scale=1.0):
        if not 0 < scale <= 1:
            raise ValueError(f"scale={scale!r} must lie in (0, 1]")
        super().__init__(scale=scale)
        self.scale = scale
    def compute(self, left, right):
        return np.full((len(left), len(right)), self.scale, dtype=np.float32)

@priorkit.hookimpl
def register_prior_providers(register):
    register("scaled", Scaled, description="a constant")
"""


def test_a_plugins_parameter_error_becomes_a_usage_error(tmp_path, monkeypatch):
    """The provider error contract: a plug-in's ValueError / TypeError from its constructor
    becomes a ProviderParameterError naming provider and parameter; the CLI exits 2 in one line."""
    from priorkit.errors import ProviderParameterError

    write_plugin(tmp_path, "scaled_plugin", CHECKED)
    pm = PriorkitPluginManager(plugins_dir=tmp_path, load_entry_points=False)
    with pytest.raises(ProviderParameterError, match=r"provider 'scaled' \(plug-in 'scaled_plugin'\) rejected "
                                                     r"parameter scale: scale=2\.0 must lie in \(0, 1\]"):
        pm.get_provider("scaled", scale=2.0)
    with pytest.raises(ProviderParameterError, match=r"rejected parameter colour: .*unexpected keyword"):
        pm.get_provider("scaled", colour="red")
    monkeypatch.setenv("PRIORKIT_PLUGINS_DIR", "")
    out = subprocess.run([sys.executable, "-m", "priorkit", "--plugins-dir", str(tmp_path), "show", "a b",
                          "--provider", "scaled", "--param", "scale=2"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: provider 'scaled' (plug-in 'scaled_plugin') rejected parameter scale: scale=2 must lie in (0, 1] "
        "(`priorkit providers` lists each provider's parameters)"]


def test_ontology_parameter_errors_are_usage_errors():
    from priorkit.errors import ProviderParameterError

    with pytest.raises(ProviderParameterError, match=r"ontology: unknown measure 'bogus'; choose one of lin"):
        priorkit.get_provider("ontology", path=str(Path(__file__).parent / "fixtures" / "ontology" / "mini.obo"),
                              measure="bogus")
