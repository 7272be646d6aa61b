"""Experiment config validation: one clear ConfigError per problem, nothing written."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from workbench.__main__ import main
from workbench.errors import ConfigError
from workbench.experiment.config import load_config, parse_config
from workbench.experiment.datasets import resolve_datasets

from conftest import REPO

PLUGIN = textwrap.dedent(
    """
    import numpy as np
    from workbench.learners.base import Learner
    from workbench.learners.registry import register


    class CfgStandIn(Learner):
        preprocessing = "none"

        def __init__(self, m: float = 1.0, depth: int = 2, mode: str = "a"):
            self.m, self.depth, self.mode = m, depth, mode

        def fit(self, data):
            self._remember_header(data)
            self.k = data.n_classes
            return self

        def predict_proba(self, data):
            return np.full((data.n_instances, self.k), 1.0 / self.k)


    register("CfgStandIn", CfgStandIn)
    """
)


@pytest.fixture(scope="session")
def plugin_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("cfgplugin") / "cfg_standin.py"
    p.write_text(PLUGIN)
    return p


def write(tmp_path: Path, body: str, plugin: Path) -> Path:
    text = f"plugins: [{plugin}]\n" + textwrap.dedent(body).lstrip("\n")
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


GOOD = """
name: tiny
datasets: [iris, vote]
protocol: {rounds: 2, folds: 2, seed: 3}
learners:
  S: CfgStandIn
  S-m0.5: {learner: CfgStandIn, m: 0.5}
baseline: S
"""


def test_valid_config_defaults_and_variants(tmp_path, plugin_file, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = load_config(write(tmp_path, GOOD, plugin_file))
    assert cfg.name == "tiny"
    assert cfg.protocol.rounds == 2 and cfg.protocol.folds == 2 and cfg.protocol.seed == 3
    assert cfg.protocol.stratify is False
    assert cfg.learner_names == ["S", "S-m0.5"]
    assert cfg.learner("S-m0.5").learner == "CfgStandIn"
    assert dict(cfg.learner("S-m0.5").params) == {"m": 0.5}
    assert cfg.baseline == "S"
    assert cfg.output == Path("results/tiny")
    assert cfg.plugins == (str(plugin_file),)
    found, missing = resolve_datasets(cfg)
    assert [r.name for r in found] == ["house-votes-84", "iris"]  # alias resolved, largest first
    assert missing == []


def test_groups_all_and_data_dirs_relative_to_config(tmp_path, plugin_file):
    sub = tmp_path / "cfg"
    sub.mkdir()
    (tmp_path / "extra").mkdir()
    path = write(sub, """
        name: g
        datasets: [small, iris]
        data_dirs: [../extra]
        learners: [CfgStandIn]
        output: out/here
    """, plugin_file)
    cfg = load_config(path)
    assert cfg.data_dirs == ((tmp_path / "extra").resolve(),)
    assert cfg.datasets == ("small", "iris")
    assert cfg.baseline == "CfgStandIn"  # NB absent: first learner
    assert cfg.output == sub / "out" / "here"  # relative to the config file, like data_dirs
    found, missing = resolve_datasets(cfg)
    names = [r.name for r in found]
    assert "iris" in names and "labor" in names and len(set(names)) == len(names)
    assert "anneal" in missing or "anneal" in names  # catalog small set, maybe not present


def test_hash_ignores_presentation_but_not_protocol_or_learners(tmp_path, plugin_file):
    base = load_config(write(tmp_path, GOOD, plugin_file))
    other = parse_config(
        f"plugins: [{plugin_file}]\n"
        + textwrap.dedent(GOOD).replace("name: tiny", "name: other")
        + "output: elsewhere\nreport: {draw_decimals: 3}\n",
        source=tmp_path / "exp.yaml",
    )
    assert base.config_hash() == other.config_hash()
    assert base.with_output("x").config_hash() == base.config_hash()
    assert base.with_rounds(3).config_hash() != base.config_hash()
    changed = parse_config(
        f"plugins: [{plugin_file}]\n" + textwrap.dedent(GOOD).replace("m: 0.5", "m: 0.25"),
        source=tmp_path / "exp.yaml",
    )
    assert changed.config_hash() != base.config_hash()


BAD_CASES = {
    "unknown_learner": (
        """
        name: x
        datasets: [iris]
        learners:
          A: {learner: NoSuchLearner}
        """,
        ["exp.yaml:5", "learners.A.learner", "NoSuchLearner"],
    ),
    "bad_param_type": (
        """
        name: x
        datasets: [iris]
        learners:
          A: {learner: CfgStandIn, m: fast}
        """,
        ["exp.yaml:5", "learners.A.m", "float"],
    ),
    "unknown_param": (
        """
        name: x
        datasets: [iris]
        learners:
          A: {learner: CfgStandIn, mm: 1}
        """,
        ["learners.A.mm", "no parameter 'mm'"],
    ),
    "unknown_dataset": (
        """
        name: x
        datasets: [iris, no-such-data]
        learners: [CfgStandIn]
        """,
        ["exp.yaml:3", "datasets.1", "no-such-data"],
    ),
    "wrong_type": (
        """
        name: x
        datasets: [iris]
        protocol: {rounds: 2, folds: many}
        learners: [CfgStandIn]
        """,
        ["exp.yaml:4", "protocol.folds", "integer"],
    ),
    "wrong_type_stratify": (
        """
        name: x
        datasets: [iris]
        protocol: {stratify: maybe}
        learners: [CfgStandIn]
        """,
        ["protocol.stratify", "true or false"],
    ),
    "assignment_value": (
        """
        name: x
        datasets: [iris]
        protocol: {folds: 3, assignment: random}
        learners: [CfgStandIn]
        """,
        ["protocol.assignment", "'shuffle' or 'rows'"],
    ),
    "unknown_key": (
        """
        name: x
        datasets: [iris]
        learners: [CfgStandIn]
        rounds: 3
        """,
        ["exp.yaml:5", "rounds", "unknown key"],
    ),
    "unknown_protocol_key": (
        """
        name: x
        datasets: [iris]
        protocol: {round: 3}
        learners: [CfgStandIn]
        """,
        ["protocol.round", "unknown key"],
    ),
    "yaml_syntax": (
        """
        name: x
        datasets: [iris
        learners: [CfgStandIn]
        """,
        ["exp.yaml:", "YAML syntax error"],
    ),
    "baseline_not_a_learner": (
        """
        name: x
        datasets: [iris]
        learners: [CfgStandIn]
        baseline: NB2
        """,
        ["baseline", "NB2"],
    ),
    "missing_name": (
        """
        datasets: [iris]
        learners: [CfgStandIn]
        """,
        ["'name'"],
    ),
    "learners_wrong_type": (
        """
        name: x
        datasets: [iris]
        learners: 5
        """,
        ["learners", "expected"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_config_errors_name_the_field_and_write_nothing(case, tmp_path, plugin_file,
                                                       monkeypatch, capsys):
    body, expected = BAD_CASES[case]
    path = write(tmp_path, body, plugin_file)
    with pytest.raises(ConfigError) as err:  # data sets are looked up by a later step
        resolve_datasets(load_config(path))
    message = str(err.value)
    assert "\n" not in message
    for part in expected:
        assert part in message, (part, message)

    # through the CLI: one line on stderr, exit 2, nothing created
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert main(["run", str(path), "--output", str(tmp_path / "run")]) == 2
    err_text = capsys.readouterr().err.strip()
    assert err_text.startswith("error: ") and "\n" not in err_text
    assert sorted(os.listdir(tmp_path)) == before
    assert not (tmp_path / "results").exists()


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nlearners:\n  A: {learner: NB\ndatasets: [iris]\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}:")
    assert ":4:" in str(err.value) or ":3:" in str(err.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_rounds_override_validated(tmp_path, plugin_file):
    cfg = load_config(write(tmp_path, GOOD, plugin_file))
    with pytest.raises(ConfigError, match="--rounds"):
        cfg.with_rounds(0)


def test_project_configs_are_valid():
    """configs/*.yaml validate."""
    root = Path(__file__).resolve().parents[1] / "configs"
    expected = ["NB", "A1DE", "A1DE-S", "A1DE-W", "A1DE-SW",
                "A2DE", "A2DE-S", "A2DE-W", "A2DE-SW", "RF10"]
    pak = load_config(root / "pakdd13.yaml")
    assert pak.learner_names == expected + ["RF10-3.6.14"]
    # the paper's Weka (3.5.7) for RF10, Weka 3.6.14's rules as the variant
    assert pak.learner_parameters("RF10")["weka_version"] == "3.5.7"
    assert pak.learner_parameters("RF10-3.6.14")["weka_version"] == "3.6.14"
    assert pak.datasets == ("all",) and pak.baseline == "NB"
    assert (pak.protocol.rounds, pak.protocol.folds, pak.protocol.seed) == (20, 2, 1)
    assert pak.output == Path("results/pakdd13")
    smoke = load_config(root / "smoke.yaml")
    assert smoke.learner_names == expected
    assert smoke.protocol.rounds == 2
    found, missing = resolve_datasets(smoke)
    assert missing == [] and len(found) >= 3


def test_parsing_runs_no_user_code(tmp_path):
    bomb = tmp_path / "bomb.py"
    bomb.write_text("raise RuntimeError('imported')\n")
    text = (f"name: t\ndatasets: [iris]\nplugins: [{bomb}]\n"
            "learners: {B: {learner: FromBomb, x: 1}, N: NB}\n")
    cfg = parse_config(text, load_user_code=False)  # the plugin is not imported
    assert cfg.learner("B").learner == "FromBomb" and cfg.learner("N").learner == "NB"
    with pytest.raises(ConfigError, match="imported"):
        parse_config(text)  # a run loads it: its failure is the plugins field's error
    with pytest.raises(ConfigError, match="unknown learner"):  # no plugins: still checked
        parse_config("name: t\ndatasets: [iris]\nlearners: [Nope]\n", load_user_code=False)


def test_config_is_pure_data_sets_are_resolved_by_a_separate_step(tmp_path, plugin_file):
    path = write(tmp_path, """
        name: x
        datasets: [iris, vote, data/none.arff]
        learners: [CfgStandIn]
        """, plugin_file)
    config = load_config(path)  # no file is looked for while parsing
    assert config.datasets == ("iris", "vote", str((tmp_path / "data/none.arff").resolve()))
    with pytest.raises(ConfigError, match=r"exp.yaml:3: datasets.2: data set file not found: "):
        resolve_datasets(config)
    (tmp_path / "data").mkdir()
    shutil.copy(REPO / "datasets" / "labor.arff.gz", tmp_path / "data" / "none.arff.gz")
    config = load_config(write(tmp_path, """
        name: x
        datasets: [iris, vote, data/none.arff.gz]
        learners: [CfgStandIn]
        """, plugin_file))
    found, missing = resolve_datasets(config)
    assert [r.name for r in found] == ["house-votes-84", "iris", "none"] and not missing


# ----- parameter sweeps ----------------------------------------------------------------------
def sweep_config(learners: str) -> str:
    return "name: s\ndatasets: [iris]\nlearners:\n" + textwrap.indent(
        textwrap.dedent(learners).strip() + "\n", "  ")


def test_a_sweep_expands_to_named_variants():
    cfg = parse_config(sweep_config("""
        NB: NB
        A1DE-m: {learner: A1DE, m: [0.1, 0.5, 1, 2, 5]}
        G: {learner: A2DE, frequency_limit: 30, grid: {m: [1, 2], subsumption: [null, 100]}}
        W: {learner: WANBIA-bnc, weights: [0.5, 1.0, 0.25, 1.0]}
        """))
    got = [(lc.display, lc.learner, dict(lc.params)) for lc in cfg.learners]
    assert got == [
        ("NB", "NB", {}),
        *[(f"A1DE-m[m={v}]", "A1DE", {"m": v}) for v in (0.1, 0.5, 1, 2, 5)],
        ("G[m=1,subsumption=null]", "A2DE", {"frequency_limit": 30, "m": 1, "subsumption": None}),
        ("G[m=1,subsumption=100]", "A2DE", {"frequency_limit": 30, "m": 1, "subsumption": 100}),
        ("G[m=2,subsumption=null]", "A2DE", {"frequency_limit": 30, "m": 2, "subsumption": None}),
        ("G[m=2,subsumption=100]", "A2DE", {"frequency_limit": 30, "m": 2, "subsumption": 100}),
        # a parameter that takes a list is given one, not swept
        ("W", "WANBIA-bnc", {"weights": [0.5, 1.0, 0.25, 1.0]}),
    ]
    # the one-parameter sweep is noted for the report's figure; the grid is not
    assert cfg.report == {"sweeps": {"A1DE-m": {
        "parameter": "m", "learners": {f"A1DE-m[m={v}]": v for v in (0.1, 0.5, 1, 2, 5)}}}}
    assert cfg.learner_parameters("A1DE-m[m=0.5]")["m"] == 0.5


@pytest.mark.parametrize("learners, message", [
    ("A: {learner: A1DE, m: []}", r"learners\.A\.grid\.m: expected a non-empty list of "
                                  "distinct values"),
    ("A: {learner: A1DE, m: [1, 1]}", r"learners\.A\.grid\.m: expected a non-empty list of "
                                      "distinct values"),
    ("A: {learner: A1DE, m: 1, grid: {m: [1, 2]}}", r"learners\.A\.m: given both"),
    ("A: {learner: A1DE, grid: [1, 2]}", r"learners\.A\.grid: expected a mapping"),
    ("A: {learner: A1DE, m: [1, -2]}", r"s\.yaml:\d+: learners\.A\.m: .*"),
])
def test_sweep_errors_name_the_learner_field(learners, message, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(sweep_config(learners))
    with pytest.raises(ConfigError, match=message):
        load_config(path)
