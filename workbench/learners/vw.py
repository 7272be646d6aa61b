"""Vowpal Wabbit's SGD logistic regression as a workbench learner (JMLR 2016's VWLF / VWSF).

    learners:
      VWLF: {learner: vw, loss: logistic, passes: 3, quadratic: true}
      VWSF: {learner: vw, loss: squared, passes: 3, quadratic: true}

Martinez et al. (JMLR 2016, §3.2) ran VW's LR-SGD with its default adaptive, normalised,
importance-invariant updates, one-against-all for more than two classes, on pre-shuffled
data, with 3, 10 or 20 passes and quadratic features; VWLF optimises the logistic loss,
VWSF the squared loss, and probabilities come from the sigmoid of each class's score. Here:

- each row is one VW example: a nominal attribute j with value v is the feature ``j=v`` (one
  indicator per value, hashed by VW into ``bits`` bits), a numeric one ``j:x``; a missing
  value is the feature ``j=?`` (``missing: value``, the default: the paper treats missing
  values "as a distinct value in all cases") or no feature (``missing: none``).
  ``quadratic: true`` adds every pairwise product (``-q aa``);
- labels go through VW's one-against-all reduction (``--oaa K``), also for two classes;
- the training rows are shuffled once with the fold's seed (the paper's pre-shuffle), then
  fed to VW ``passes`` times in that order (as ``--passes N --holdout_off`` would);
- class k's probability is σ(score_k) normalised over the classes, σ the logistic
  function, whatever the loss (what VW's ``--probabilities`` gives for the logistic loss;
  the paper's sigmoid for the squared one). VW computes in single precision.

Out of core (`MultiPassLearner`, one pass over the data): the pass writes each training
row's example to a spool file on disk (its offsets and the shuffle, 24 bytes a row, stay in
memory); VW's passes then read the spool in the same seeded shuffle of the training rows as
in memory, so the model is the in-memory one, whatever the file's size. (The paper
pre-shuffled its files, and did not time that; here the shuffle is part of training.)

`VWLF` and `VWSF` discretise numeric attributes with EF5 first, as the paper's
implementation notes say of every learner ("EF5 discretization has been utilized to
discretize all numeric attributes (except if otherwise specified)"); `VWLF-raw` and
`VWSF-raw` give VW the numbers themselves. Left open by the paper, chosen here: VW's
holdout is off (every pass learns every training row), the shuffle is the fold's seed.

Needs ``pip install 'snb-workbench[vw]'`` (the ``vowpalwabbit`` package).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.base import MultiPassLearner, Param, choice, integer
from workbench.learners.registry import register


def _workspace(args: str):
    try:
        from vowpalwabbit import Workspace
    except ImportError:
        raise LearnerError("learner 'vw' needs Vowpal Wabbit: pip install "
                           "'snb-workbench[vw]' (or pip install vowpalwabbit)") from None
    return Workspace(args)


def _require_vw() -> None:
    """`LearnerError` when Vowpal Wabbit's Python package is not installed."""
    import importlib.util

    if importlib.util.find_spec("vowpalwabbit") is None:
        raise LearnerError("learner 'vw' needs Vowpal Wabbit: pip install "
                           "'snb-workbench[vw]' (or pip install vowpalwabbit)")


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


class VowpalWabbit(MultiPassLearner):
    """VW's one-against-all SGD logistic regression (see the module docstring)."""

    preprocessing = "none"
    order_free = False  # stochastic gradient descent visits rows in order
    output_version = 2  # 2: a missing value is a feature of its own (missing: value)
    parameters = (
        choice("loss", "logistic", ("logistic", "squared")),
        integer("passes", 3, 1),
        Param("quadratic", True, "true or false", lambda v: isinstance(v, bool)),
        Param("learning_rate", 0.5, "a number ≥ 0 (VW's -l)", _number),
        Param("l1", 0.0, "a number ≥ 0 (VW's --l1)", _number),
        Param("l2", 0.0, "a number ≥ 0 (VW's --l2)", _number),
        integer("bits", 18, 1, 30),
        integer("seed", None, 0, optional=True),
        choice("missing", "value", ("value", "none")),
    )

    def _reset(self) -> None:
        super()._reset()
        self._vw = None
        self._spool = None  # out of core: (the spool file, each chunk's rows' end offsets)

    def _args(self, K: int) -> str:
        return (f"--oaa {K} --scores --loss_function {self.loss} -b {self.bits} "
                f"-l {float(self.learning_rate)!r} --l1 {float(self.l1)!r} "
                f"--l2 {float(self.l2)!r} --random_seed {self.seed or 0} --quiet"
                + (" -q aa" if self.quadratic else ""))

    def _lines(self, data: Dataset, labels: np.ndarray | None) -> list[str]:
        """One VW example per row (label 1..K, or none), features in namespace ``a``."""
        cols = []
        for j, a in enumerate(data.attributes):
            x = data.X[:, j]
            gone = f" {j}=?" if self.missing == "value" else ""
            if a.is_nominal:
                names = np.array([f" {j}={v}" for v in range(a.cardinality)] + [gone], object)
                cols.append(names[np.where(np.isnan(x), a.cardinality, x).astype(np.int64)])
            else:
                cols.append(np.array([gone if v != v else f" {j}:{v!r}" for v in x.tolist()],
                                     object))
        feats = ["".join(parts) for parts in zip(*cols)] if cols else [""] * data.n_instances
        if labels is None:
            return [f" |a{f}" for f in feats]
        return [f"{int(c) + 1} |a{f}" for c, f in zip(labels, feats)]

    def preflight(self) -> None:
        _require_vw()

    def _fit(self, rows: Dataset) -> None:
        lines = self._lines(rows, rows.y)
        self._train(rows.n_classes, len(lines), lines.__getitem__)

    def _train(self, K: int, n: int, line) -> None:
        """VW's passes over the n training examples (`line(i)`: the i-th in data order),
        each in the fold's one seeded shuffle."""
        vw = _workspace(self._args(K))
        order = np.random.default_rng(self.seed).permutation(n)
        for _ in range(self.passes):
            for i in order:
                vw.learn(line(i))
        self._vw = vw

    # ----- out of core: one pass over the data, VW's passes over a spool of its examples
    def n_passes(self) -> int:
        return 1

    def _begin(self, header: Dataset) -> None:
        self._spool = (tempfile.TemporaryFile(prefix="workbench-vw-"), [])

    def _learn(self, pass_no: int, rows: Dataset) -> None:
        spool, ends = self._spool
        data = [line.encode() for line in self._lines(rows, rows.y)]
        at = spool.tell()
        spool.write(b"".join(data))
        ends.append(at + np.cumsum(np.fromiter(map(len, data), np.int64, len(data))))

    def _end_pass(self, pass_no: int) -> None:
        spool, ends = self._spool
        end = np.concatenate(ends) if ends else np.zeros(0, dtype=np.int64)
        start = np.concatenate([[0], end[:-1]])

        def line(i: int) -> str:
            spool.seek(int(start[i]))
            return spool.read(int(end[i] - start[i])).decode()

        try:
            if not len(end):
                raise LearnerError(f"{type(self).__name__}: no training rows with a class")
            spool.flush()
            self._train(self._header.n_classes, len(end), line)
        finally:
            spool.close()
            self._spool = None

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """σ(score) per class, normalised (n, K)."""
        self._check_fitted(data)
        if not data.n_instances:
            return np.zeros((0, data.n_classes))
        scores = np.array([self._vw.predict(line) for line in self._lines(data, None)],
                          dtype=np.float64).reshape(data.n_instances, data.n_classes)
        p = 1.0 / (1.0 + np.exp(-scores))
        return p / p.sum(axis=1, keepdims=True)

    # a fitted model pickles as VW's own saved model
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self._vw is not None:
            fd, path = tempfile.mkstemp(suffix=".vw")
            os.close(fd)
            try:
                self._vw.save(path)
                with open(path, "rb") as fh:
                    state["_vw"] = fh.read()
            finally:
                os.unlink(path)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if isinstance(self._vw, (bytes, bytearray)):
            fd, path = tempfile.mkstemp(suffix=".vw")
            with os.fdopen(fd, "wb") as fh:
                fh.write(self._vw)
            try:
                self._vw = _workspace(f"-i {path} --scores --quiet")
            finally:
                os.unlink(path)


register("vw", VowpalWabbit,
         description="Vowpal Wabbit's one-against-all SGD logistic regression (JMLR 2016's "
                     "VWLF/VWSF comparator)")
register("VWLF", VowpalWabbit, description="VW with the logistic loss, 3 passes, quadratic "
         "features, EF5 attributes (JMLR 2016)", loss="logistic", passes=3, quadratic=True,
         preprocessing="ef:5")
register("VWSF", VowpalWabbit, description="VW with the squared loss, 3 passes, quadratic "
         "features, EF5 attributes (JMLR 2016)", loss="squared", passes=3, quadratic=True,
         preprocessing="ef:5")
register("VWLF-raw", VowpalWabbit, description="VWLF on the numeric attributes as they are",
         loss="logistic", passes=3, quadratic=True)
register("VWSF-raw", VowpalWabbit, description="VWSF on the numeric attributes as they are",
         loss="squared", passes=3, quadratic=True)
