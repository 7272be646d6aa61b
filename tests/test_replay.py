"""`evaluation.outofcore.replay.Replay`: a file decoded once, its later passes read from a
compact copy — the same chunks bit for bit, no copy left behind, and the file read again when there is
no room for one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.evaluation.outofcore import replay
from workbench.evaluation.outofcore.replay import Replay
from workbench.data.sources import scan_header
from workbench.evaluation.outofcore import evaluate_kfold

from conftest import EMBEDDED


def _file(tmp_path, n=1000, numeric=True):
    """Parquet with a nominal column of 300 values (codes need 16 bits), a numeric one
    (unless not `numeric`) and a small nominal one with missing values, and a class
    missing on some rows."""
    rng = np.random.default_rng(4)
    many = [f"v{i}" for i in rng.integers(0, 300, n)]
    num = rng.normal(size=n)
    num[rng.random(n) < 0.1] = np.nan
    few = [None if u < 0.15 else "ab"[int(u * 10) % 2] for u in rng.random(n)]
    cls = [None if u < 0.05 else "yn"[int(u * 7) % 2] for u in rng.random(n)]
    path = tmp_path / "mixed.parquet"
    cols = {"many": many, "num": pa.array(num, from_pandas=True), "few": few, "class": cls}
    if not numeric:
        del cols["num"]
    pq.write_table(pa.table(cols), path, row_group_size=128)
    return path


def _passes(src, k):
    return [[(s, c.X.copy(), c.y.copy()) for s, c in src.chunks()] for _ in range(k)]


def _same(a, b):
    assert [s for s, _, _ in a] == [s for s, _, _ in b]
    for (_, X1, y1), (_, X2, y2) in zip(a, b):
        assert X1.shape == X2.shape
        np.testing.assert_array_equal(X1.view(np.uint64), X2.view(np.uint64))  # NaN bits too
        np.testing.assert_array_equal(y1, y2)


@pytest.mark.parametrize("numeric", [True, False])  # (all nominal: the straight copy)
def test_replayed_chunks_are_the_files_bit_for_bit(tmp_path, monkeypatch, numeric):
    monkeypatch.setenv(replay.DIR_ENV, str(tmp_path / "spill"))
    (tmp_path / "spill").mkdir()
    path = _file(tmp_path, numeric=numeric)
    header = scan_header(path)
    src = Replay(path, 300, header, 1000)
    assert src.copying and src._type is np.uint16
    first, again, third = _passes(src, 3)
    assert src.replayed == 2
    assert np.isnan(first[0][1]).any() and (first[0][2] < 0).any()  # missing values met
    assert [len(y) for _, _, y in first] == [300, 300, 300, 100]
    _same(first, again)
    _same(first, third)
    assert list((tmp_path / "spill").iterdir())  # the copy, while open
    src.close()
    assert not list((tmp_path / "spill").iterdir())  # nothing left behind


def test_a_pass_stopped_early_leaves_no_copy(tmp_path):
    path = _file(tmp_path)
    with Replay(path, 300, scan_header(path), 1000) as src:
        next(src.chunks())  # one chunk read, then dropped
        whole = _passes(src, 1)[0]
        assert src.replayed == 0  # the stopped pass left no copy: this one read the file
        _same(whole, _passes(src, 1)[0])
        assert src.replayed == 1


def test_without_room_every_pass_reads_the_file_and_cv_is_unchanged(tmp_path, monkeypatch,
                                                                    capsys):
    path = EMBEDDED / "labor.arff.gz"

    def cv(learner):
        got = {}
        res = evaluate_kfold(path, learner, folds=5, rounds=2, seed=3, chunk_rows=7,
                             keep=lambda r, f, idx, p, y: got.setdefault(r, []).append(p))
        return res, {k: np.vstack(v) for k, v in got.items()}

    with_copy = {lr: cv(lr) for lr in ("A1DE", "KDB2")}
    assert with_copy["A1DE"][0].summary["replayed"] >= 3  # (sample, train, score passes)
    monkeypatch.setattr(replay.shutil, "disk_usage",
                        lambda where: type("U", (), {"free": 1 << 20})())
    for lr, (res, probs) in with_copy.items():
        res2, probs2 = cv(lr)
        assert res2.summary["replayed"] == 0
        assert "every pass reads the file again" in capsys.readouterr().err
        assert probs.keys() == probs2.keys()
        for k in probs:
            np.testing.assert_array_equal(probs[k], probs2[k])
        assert [f.sums for f in res.folds] == [f.sums for f in res2.folds]
