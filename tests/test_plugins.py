"""Plugin loading: file and module plugins, clashes, import failures, rollback."""

from __future__ import annotations

import textwrap

import pytest

from workbench.learners import registry
from workbench.plugins import PluginError, load_plugin

PLUGIN = textwrap.dedent(
    """
    import numpy as np
    from workbench import Learner, register

    @register("{name}", description="class prior only")
    class Prior(Learner):
        preprocessing = "none"

        def __init__(self, alpha: float = 1.0):
            self.alpha = alpha

        def fit(self, data):
            self._remember_header(data)
            y = data.y[data.y >= 0]
            counts = np.bincount(y, minlength=data.n_classes) + self.alpha
            self.prior_ = counts / counts.sum()
            return self

        def predict_proba(self, data):
            self._check_fitted(data)
            return np.tile(self.prior_, (data.n_instances, 1))
    """
)


@pytest.fixture
def clean_registry():
    registry.load_builtins()
    before = set(registry.names())
    yield
    for name in set(registry.names()) - before:
        registry.unregister(name)


def test_file_plugin_registers_with_its_path_as_source(tmp_path, clean_registry):
    f = tmp_path / "prior_plugin.py"
    f.write_text(PLUGIN.format(name="PriorT1"))
    load_plugin("prior_plugin.py", base_dir=tmp_path)
    spec = registry.get("PriorT1")
    assert spec.source == str(f.resolve())
    assert spec.description == "class prior only"
    learner = registry.create("PriorT1", alpha=2.0)
    assert learner.alpha == 2.0 and learner.preprocessing == "none"
    # loading the same file again is a no-op, not a clash
    load_plugin(str(f))
    with pytest.raises(Exception, match="alpha"):
        registry.create("PriorT1", alpha="x")


def test_clashing_name_names_both_sources(tmp_path, clean_registry):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(PLUGIN.format(name="PriorT2"))
    b.write_text(PLUGIN.format(name="PriorT2"))
    load_plugin(str(a))
    with pytest.raises(PluginError) as info:
        load_plugin(str(b))
    msg = str(info.value)
    assert "registered twice" in msg and str(a.resolve()) in msg and str(b.resolve()) in msg
    assert registry.get("PriorT2").source == str(a.resolve())


def test_import_failure_is_one_clear_error_and_rolls_back(tmp_path, clean_registry):
    f = tmp_path / "broken.py"
    f.write_text(PLUGIN.format(name="PriorT3") + "\nraise RuntimeError('boom')\n")
    with pytest.raises(PluginError) as info:
        load_plugin(str(f))
    msg = str(info.value)
    assert "broken.py" in msg and "RuntimeError: boom" in msg and "line" in msg
    assert "PriorT3" not in registry.names()  # what it registered before failing is gone


def test_syntax_error_and_missing_plugins(tmp_path, clean_registry):
    f = tmp_path / "syntax.py"
    f.write_text("def oops(:\n")
    with pytest.raises(PluginError, match=r"syntax\.py, line 1"):
        load_plugin(str(f))
    with pytest.raises(PluginError, match="file not found"):
        load_plugin("nope/missing.py", base_dir=tmp_path)
    with pytest.raises(PluginError, match="ModuleNotFoundError"):
        load_plugin("no_such_module_for_workbench")


def test_entry_point_plugins_are_loaded(tmp_path, monkeypatch, clean_registry):
    """An installed distribution advertising a `workbench.learners` entry point."""
    from workbench.learners.registry import load_entry_points

    (tmp_path / "wb_ep_plugin.py").write_text(PLUGIN.format(name="PriorEP"))
    dist = tmp_path / "wb_ep_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: wb-ep-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[workbench.learners]\nprior = wb_ep_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load_entry_points()
    assert loaded == ["entry point prior = wb_ep_plugin"]
    assert registry.get("PriorEP").source.startswith("wb_ep_plugin (")


def test_builtins_are_found_by_a_package_scan(tmp_path, monkeypatch, clean_registry):
    """`import_package` imports every public module and subpackage of a package (the
    built-in learners are `workbench.learners` scanned): a module dropped in registers its
    learners without being listed anywhere; private modules are left out."""
    pkg = tmp_path / "wb_scan_pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha.py").write_text(PLUGIN.format(name="PriorScanA"))
    (pkg / "sub" / "__init__.py").write_text(PLUGIN.format(name="PriorScanB"))
    (pkg / "_private.py").write_text("raise RuntimeError('not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.import_package("wb_scan_pkg") == ["wb_scan_pkg.alpha", "wb_scan_pkg.sub"]
    assert {"PriorScanA", "PriorScanB"} <= set(registry.names())
    # the built-ins: every family module of workbench.learners is among the scanned ones
    scanned = registry.import_package(registry.BUILTIN_PACKAGE)
    for family in ("ande", "anje", "bayesnet", "external", "forest", "kdb", "vw", "weka"):
        assert f"workbench.learners.{family}" in scanned
    assert {"A1DE", "KDB2", "BayesNet", "RF10", "WANBIA"} <= set(registry.names())
