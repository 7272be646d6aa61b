"""Test-then-train over a file's rows in windows (`prequential_loop`): the CLI's
``evaluate --prequential``, and the prequential protocol's fold in memory or read from a
file."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.discretize import fit_discretizer, is_incremental
from workbench.evaluation.metrics import LossSums, loss_sums, pooled_metrics
from workbench.evaluation.outofcore.fit import OutOfCoreResult
from workbench.evaluation.outofcore.passes import (DEFAULT_CHUNK, file_chunks, first_pass,
                                                   out_of_core_model)
from workbench.evaluation.pipeline import FoldResult, checked_proba, peak_rss, reset_peak_rss
from workbench.jit import CompileTime, compile_clock

def prequential_loop(windows, model, header: Dataset, seed: int = 1,
                     keep: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None
                     ) -> tuple[Any, float, float, CompileTime]:
    """Test-then-train over `windows` ((first row, Dataset) in order): each window's rows
    with a known class are predicted by the model of all earlier windows (from the second
    window on), then learned. The learner's preprocessing decides the cut points: IDA /
    IDAW (``ida:B:S``, ``idaw:B:S``) follow the stream, updated after every window; a batch
    method (MDL, EF) is fitted on the first window and kept. Each window's predictions go
    to ``keep(row indices, probabilities, true classes)`` as soon as they are made (and
    checked, outside the timers), so the loop itself holds one window whatever the stream's
    length. Returns the discretiser, the training and testing CPU seconds, and the kernel
    compilation kept out of them (`workbench.jit.compile_clock`)."""
    method = str(getattr(model, "preprocessing", "none") or "none")
    incremental = method != "none" and is_incremental(method)
    disc = None
    train_cpu = test_cpu = 0.0
    clock = compile_clock()
    first = clock.read()
    name = type(model).__name__
    for start, chunk in windows:
        keep_rows = np.flatnonzero(chunk.y >= 0)
        labelled = chunk.take(keep_rows)
        c0 = clock.read()
        t0 = time.process_time()
        if disc is None and method != "none":
            disc = fit_discretizer(method, labelled if not incremental else
                                   labelled.take(np.arange(0)), seed=seed)
            if incremental:
                disc.update(labelled)  # the first window is only learned
        proba = None
        if model._header is not None and labelled.n_instances:
            proba = model.predict_proba(disc.transform(labelled) if disc else labelled)
        t1 = time.process_time()
        c1 = clock.read()
        if labelled.n_instances:
            model.partial_fit(disc.transform(labelled) if disc else labelled)
            if incremental and model._header is not None and start:
                disc.update(labelled)
        t2 = time.process_time()
        c2 = clock.read()
        test_cpu += t1 - t0 - (c1 - c0).cpu_seconds
        train_cpu += t2 - t1 - (c2 - c1).cpu_seconds
        if proba is not None:
            checked_proba(proba, labelled.y.size, header.n_classes, name)
            if keep is not None:
                keep(start + keep_rows, proba, labelled.y)
    return disc, max(train_cpu, 0.0), max(test_cpu, 0.0), clock.read() - first


def evaluate_prequential(path, learner: Any, params: Mapping[str, Any] | None = None, *,
                         window: int = 1000, seed: int = 1, class_column: str | None = None
                         ) -> OutOfCoreResult:
    """Test-then-train over the file's rows in windows of `window` rows (see
    `prequential_loop`; preprocessing from the learner, or ``preprocessing`` in `params`,
    e.g. ``"ida:5:1000"``)."""
    model = out_of_core_model(learner, params, seed, stream=True)
    header, total, _ = first_pass(path, window, class_column, None, None, seed)
    reset_peak_rss()
    K = header.n_classes
    sums: list = []  # one window's sums (a few numbers) each: no predictions are kept
    windows: list[dict[str, Any]] = []

    def keep(rows: np.ndarray, proba: np.ndarray, y: np.ndarray) -> None:
        s = loss_sums(proba, y)
        sums.append(s)
        windows.append({"start": int(rows[0]), "rows": s.n, **pooled_metrics([s], K)})

    disc, train_cpu, test_cpu, compiled = prequential_loop(
        file_chunks(path, window, header, class_column), model, header, seed, keep)
    summary = {"rows": total, "window": window, "windows": len(windows),
               "n_test": sum(s.n for s in sums),
               "preprocessing": str(getattr(model, "preprocessing", "none")),
               "train_cpu_seconds": train_cpu, "test_cpu_seconds": test_cpu,
               "compile_seconds": compiled.cpu_seconds, **pooled_metrics(sums, K),
               "model_bytes": model.model_bytes() if hasattr(model, "model_bytes") else None,
               "peak_rss_bytes": peak_rss()}
    return OutOfCoreResult(summary, windows, model, disc, header)


def prequential_fold(data: Dataset, learner: Any, params: Mapping[str, Any] | None,
                     window: int, seed: int | None = None) -> FoldResult:
    """The prequential protocol's one fold on in-memory rows (file order): the test rows
    are every row after the first window; their probabilities are those the stream gave."""
    n = data.n_instances
    windows = ((lo, data.take(np.arange(lo, min(lo + window, n))))
               for lo in range(0, n, window))
    return stream_fold(windows, data, n, learner, params, seed)[0]


def class_known_windows(path, window: int, header: Dataset,
                        class_column: str | None = None) -> Iterator[tuple[int, Dataset]]:
    """A file's rows with a class in windows of `window` rows (the last one shorter),
    each with its first row's index among those rows: the windows `prequential_fold`
    makes of the same data in memory."""
    X: list[np.ndarray] = []
    y: list[np.ndarray] = []
    held = start = 0
    for _, chunk in file_chunks(path, max(window, DEFAULT_CHUNK), header, class_column):
        known = np.flatnonzero(chunk.y >= 0)
        X.append(chunk.X[known])
        y.append(chunk.y[known])
        held += known.size
        while held >= window:
            allX, ally = np.vstack(X), np.concatenate(y)
            yield start, header.replace(X=allX[:window], y=ally[:window])
            X, y = [allX[window:]], [ally[window:]]
            held -= window
            start += window
    if held:
        yield start, header.replace(X=np.vstack(X), y=np.concatenate(y))


def stream_fold(windows, header: Dataset, n: int, learner: Any,
                params: Mapping[str, Any] | None, seed: int | None = None,
                predictions: bool = True) -> tuple[FoldResult, np.ndarray]:
    """The prequential fold over `windows` ((first row, rows) of `n` rows with a class, in
    memory or read from a file: `class_known_windows`) and its test rows' classes: the
    stream's predictions, or without `predictions` only their loss sums (constant
    memory; no classes)."""
    model = out_of_core_model(learner, params, seed, stream=True)
    reset_peak_rss()
    wall0 = time.perf_counter()
    preds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    sums: list[LossSums] = []

    def keep(rows: np.ndarray, proba: np.ndarray, y: np.ndarray) -> None:
        if predictions:
            preds.append((rows, proba, y))
        else:
            sums.append(loss_sums(proba, y))

    disc, train_cpu, test_cpu, compiled = prequential_loop(
        windows, model, header, 1 if seed is None else seed, keep)
    wall = max(time.perf_counter() - wall0 - compiled.wall_seconds, 0.0)
    rows = np.concatenate([r for r, _, _ in preds]) if preds else np.zeros(0, np.int64)
    proba = np.vstack([p for _, p, _ in preds]) if preds else np.zeros((0, header.n_classes))
    cuts = getattr(disc, "cuts", None)
    y = np.concatenate([t for _, _, t in preds]) if preds else np.zeros(0, np.int64)
    return FoldResult(
        round=0, fold=0, test_index=rows, proba=proba, train_cpu_seconds=train_cpu,
        test_cpu_seconds=test_cpu, train_wall_seconds=wall * train_cpu / max(
            train_cpu + test_cpu, 1e-12), test_wall_seconds=wall * test_cpu / max(
            train_cpu + test_cpu, 1e-12), n_train=n,
        preprocessing=str(getattr(model, "preprocessing", "none")),
        cuts={k: [float(c) for c in v] for k, v in cuts.items()} if cuts else None,
        model_bytes=model.model_bytes() if hasattr(model, "model_bytes") else None,
        fit_report=model.fit_report() if hasattr(model, "fit_report") else None,
        peak_rss_bytes=peak_rss(), compile_seconds=compiled.cpu_seconds,
        compiled_kernels=compiled.compiled,
        sums=None if predictions else tuple(LossSums(*(sum(c) for c in zip(*sums)))
                                             if sums else LossSums(0, 0, 0.0, 0.0, 0.0))), y
