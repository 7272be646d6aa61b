"""Training every fold of a round from shared counts: the AnDE family by subtraction
(one counting pass, fold f = total − fold f), and the additive passes of the KDB family —
structure counts by subtraction among folds of one structure, family counts from one joint
count of the folds' parents."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from workbench.evaluation.outofcore.assignment import CVFold, Grouped, fold_chunks, rows_of
from workbench.evaluation.outofcore.passes import fold_cpu
from workbench.evaluation.outofcore.replay import Replay
from workbench.learners.base import trains_in_passes

def subtracts(model: Any, discs: list[Any] | None) -> bool:
    """Count subtraction applies: an additive one-pass model (`start`/`merge`) and the same
    codes in every fold (no per-fold cut points)."""
    return discs is None and hasattr(model, "start") and hasattr(model, "merge") \
        and not trains_in_passes(model)


def train_subtracting(src: Replay, models, cv, assign, round_, total) -> int:
    """One counting pass (each row into its own fold's table), then fold f's training
    table = total − fold f's. Returns the passes read (1)."""
    k = len(models)
    for m in models:
        m.start(src.header, total)
    own = np.zeros(k)
    n_train = np.zeros(k, dtype=np.int64)
    cpu = fold_cpu()
    index = 0
    by_fold = Grouped()
    for part, _, fold in fold_chunks(src, assign, round_):
        index += part.n_instances
        grouped, _, bounds = by_fold(part, fold, k)
        for f in range(k):
            if bounds[f + 1] > bounds[f]:
                t = fold_cpu()
                models[f].partial_fit(rows_of(grouped, bounds, f))
                own[f] += fold_cpu() - t
                n_train[f] += bounds[f + 1] - bounds[f]
    shared = fold_cpu() - cpu
    cpu = fold_cpu()
    whole = copy.deepcopy(models[0])
    for m in models[1:]:
        whole.merge(m)
    shared += fold_cpu() - cpu
    for f in assign.scored:
        t = fold_cpu()
        train = copy.deepcopy(whole).merge(models[f], sign=-1)
        models[f] = train
        cv[f].train_cpu_seconds += fold_cpu() - t + shared / len(assign.scored)
        cv[f].n_train = int(index - n_train[f])
    return 1


def shared_pass(src: Replay, models, cv, discs, assign, round_, p: int, own: np.ndarray,
                n_train: np.ndarray) -> list[int]:
    """Additive pass `p` by count subtraction: the models whose `pass_key` and cut points
    agree form a group; in one read each row is counted once per group, into its own
    fold's count (under the group's structure), and model f's pass-p counts are the total
    less fold f's — each row counted once per distinct structure, not k − 1 times. What
    cannot be shared: a model whose structure (or cut points) no other fold has — it
    learns its training rows itself (returned) — and a non-additive pass (SKDB's
    leave-one-out losses). Counting time is split equally within a group."""
    k = len(models)
    groups: dict[Any, list[int]] = {}
    for f in assign.scored:
        groups.setdefault((models[f].pass_key(p), cut_key(cv[f])), []).append(f)
    shared = [g for g in groups.values() if len(g) > 1]
    if not shared:
        return assign.scored
    by_fold = Grouped()
    counts = [[copy.deepcopy(models[g[0]]) for _ in range(k)] for g in shared]
    rows = np.zeros(k, dtype=np.int64)
    cpu = fold_cpu()
    for part, _, fold in fold_chunks(src, assign, round_):
        rows += np.bincount(fold, minlength=k)
        for g, acc in zip(shared, counts):
            f0 = g[0]
            mine = discs[f0].transform(part) if discs is not None else part
            grouped, _, bounds = by_fold(mine, fold, k)
            for h in range(k):
                if bounds[h + 1] > bounds[h]:
                    acc[h].learn(p, rows_of(grouped, bounds, h))
    spent = (fold_cpu() - cpu) / sum(len(g) for g in shared)
    for g, acc in zip(shared, counts):
        t = fold_cpu()
        total = copy.deepcopy(acc[0])
        for part_counts in acc[1:]:
            total.merge_pass(p, part_counts)
        merged = (fold_cpu() - t) / len(g)
        for f in g:
            t = fold_cpu()
            models[f].merge_pass(p, total).merge_pass(p, acc[f], sign=-1)
            own[f] += fold_cpu() - t + spent + merged
            n_train[f] = rows.sum() - rows[f]
    return [f for g in groups.values() if len(g) == 1 for f in g]


def shares_families(models, active: list[int], cv, p: int) -> bool:
    """Pass `p` counts families' tuples (`family_columns`), every fold has the same codes
    (cut points) and there are several models (a holdout's one model counts its own
    training rows)."""
    return len(active) > 1 and len({cut_key(cv[f]) for f in active}) == 1 and all(
        getattr(models[f], "family_columns", lambda p: None)(p) is not None for f in active)


FAMILY_SPACE = 1 << 22
"""The largest tuple space (beyond the rows counted) of one joint family count: larger
unions of the folds' parents are split (`family_pass`)."""


def family_pass(src: Replay, models, discs, assign, round_, p: int, own: np.ndarray,
                n_train: np.ndarray) -> list[int]:
    """A pass of family counts (KDB's, TAN's, SKDB's second) for every fold at once, what
    differs between folds being only the parents chosen: per attribute, the tuples of
    the union of the folds' families, the class and the row's fold are counted once per
    row; fold f's family counts are then those tuples of the other folds, summed over the
    parents its model does not use (integer counts: exactly the counts of its training
    rows). The folds whose union would exceed `FAMILY_SPACE` tuples (beyond the rows) are
    counted in several such joint counts. So a row is counted about once per attribute,
    as in one fit, not k − 1 times. The folds share their cut points (`shares_families`):
    the rows are coded with the first scored fold's."""
    k = len(models)
    scored = assign.scored
    disc = None if discs is None else discs[scored[0]]
    header = src.header if disc is None else disc.transform(src.header)
    declared = header.cardinalities.astype(np.int64)  # (what every model began with)
    K = header.n_classes
    fams = {f: models[f].family_columns(p) for f in scored}
    joints = []  # (attribute, columns, folds, TupleCounts of columns + class + fold)
    for a in fams[scored[0]]:
        group: list[int] = []
        cols: set[int] = set()
        for f in sorted(scored, key=lambda f: fams[f][a]):
            more = cols | set(fams[f][a])
            space = np.prod([float(declared[c] + 1) for c in more]) * K * k
            if group and space > max(FAMILY_SPACE, src.rows):
                joints.append(_joint(a, cols, group, declared, K, k))
                group, more = [], set(fams[f][a])
            group.append(f)
            cols = more
        joints.append(_joint(a, cols, group, declared, K, k))
    rows = np.zeros(k, dtype=np.int64)
    cpu = fold_cpu()
    for part, _, fold in fold_chunks(src, assign, round_):
        rows += np.bincount(fold, minlength=k)
        codes = (part if disc is None else disc.transform(part)).column_codes(np.int64)
        for c in range(codes.shape[0]):
            codes[c][codes[c] < 0] = declared[c]
        for _, cols, _, counts in joints:
            counts.add(np.column_stack([*(codes[c] for c in cols), part.y, fold]))
    spent = (fold_cpu() - cpu) / len(scored)
    for a, cols, group, counts in joints:
        tuples, weights = counts.decode(), counts.counts
        at = {c: i for i, c in enumerate(cols)}
        for f in group:
            t = fold_cpu()
            mine = tuples[:, -1] != f
            take = [at[c] for c in fams[f][a]] + [len(cols)]
            models[f].set_family_counts(a, tuples[mine][:, take], weights[mine])
            own[f] += fold_cpu() - t
    for f in scored:
        own[f] += spent
        n_train[f] = rows.sum() - rows[f]
    return []


def _joint(a: int, cols: set[int], group: list[int], declared: np.ndarray, K: int, k: int
           ) -> tuple[int, list[int], list[int], Any]:
    from workbench.learners.tuples import TupleCounts

    order = sorted(cols)
    return a, order, group, TupleCounts([int(declared[c]) + 1 for c in order] + [K, k])


def cut_key(fold: CVFold) -> Any:
    """A fold's cut points as a hashable key (equal cut points: equal codes)."""
    return tuple(sorted((a, tuple(c)) for a, c in (fold.cuts or {}).items()))
