"""Training k fold models side by side in the learner's own passes, each pass one read
of the file for all folds (an additive pass shared: `subtraction`)."""

from __future__ import annotations

import numpy as np

from workbench.errors import WorkbenchError
from workbench.evaluation.outofcore.assignment import fold_chunks
from workbench.evaluation.outofcore.passes import fold_cpu
from workbench.evaluation.outofcore.replay import Replay
from workbench.evaluation.outofcore.subtraction import (family_pass, shared_pass,
                                                        shares_families)
from workbench.learners.base import trains_in_passes

def train_side_by_side(src: Replay, models, cv, discs, assign, round_) -> tuple[int, bool]:
    """k models trained in the learner's passes, each pass one read of the file for all
    folds (fold f's model learns the rows of the other folds, with its cut points); an
    additive pass (`MultiPassLearner.additive_pass`) is shared by the models whose counts
    agree (`shared_pass`). Returns the passes read and whether one was shared."""
    k = len(models)
    sharing = False
    multi = trains_in_passes(models[0])
    active = assign.scored
    if multi:
        for f in active:
            models[f].begin(discs[f].transform(src.header) if discs is not None
                            else src.header)
    p = 0
    while active:
        own = np.zeros(k)
        n_train = np.zeros(k, dtype=np.int64)
        cpu = fold_cpu()
        if multi and shares_families(models, active, cv, p):
            alone = family_pass(src, models, discs, assign, round_, p, own, n_train)
        elif multi and models[active[0]].additive_pass(p):
            alone = shared_pass(src, models, cv, discs, assign, round_, p, own, n_train)
        else:
            alone = active
        sharing = sharing or len(alone) < len(active)
        for part, _, fold in (fold_chunks(src, assign, round_) if alone else ()):
            for f in alone:
                rows = np.flatnonzero(fold != f)
                if not rows.size:
                    continue
                t = fold_cpu()
                rows_f = part.take(rows)
                rows_f = discs[f].transform(rows_f) if discs is not None else rows_f
                models[f].learn(p, rows_f) if multi else models[f].partial_fit(rows_f)
                own[f] += fold_cpu() - t
                n_train[f] += rows.size
        for f in active:
            if n_train[f] == 0:
                raise WorkbenchError(f"{src.path}: fold {f + 1} has no training rows with "
                                     "a class")
            t = fold_cpu()
            if multi:
                models[f].end_pass(p)
            own[f] += fold_cpu() - t
        shared = fold_cpu() - cpu - own.sum()
        for f in active:
            cv[f].train_cpu_seconds += own[f] + shared / len(active)
            cv[f].n_train = int(n_train[f])
        active = [f for f in active if multi and models[f].training]
        p += 1
    return p, sharing
