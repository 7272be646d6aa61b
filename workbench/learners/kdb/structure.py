"""KDB structure (SPEC §4): MI(X_i; Y) and CMI(X_i; X_j | Y) in bits from raw relative
frequencies (zero-count terms skipped, each sum taken over its terms sorted so that equal
multisets of terms give bit-identical scores), the MI order and the parent choices of KDB
and TAN."""

from __future__ import annotations

import numpy as np

from workbench.jit import numba
from workbench.learners.counting import KIND_DENSE, code_dtype
from workbench.learners.counting.blocks import laid_out
from workbench.learners.tuples import merge_sorted_counts
from workbench.rowops import class_counts as count_classes

# A dense (v, w, y) table per attribute pair is used when it has at most this many cells
# (in memory: `_DENSE_ROWS_CELLS`, or 4 cells per training row); otherwise the pair is
# counted sparsely with np.unique. In memory a sparse pair costs about what finding the
# nonzero cells of 32 k dense ones does (splice: 60 pairs of its 3,178-valued ID
# attribute, 48 k cells each for 1,595 rows).
_DENSE_PAIR_CELLS = 1 << 16
_DENSE_ROWS_CELLS = 1 << 15



def _mutual_information(tables: list[np.ndarray], ny: np.ndarray, N: float) -> np.ndarray:
    """MI(X; Y) in bits of each (value, class) count table in `tables` (`_PairTerms`)."""
    if not tables:
        return np.zeros(0)
    radix = np.array([len(t) for t in tables], dtype=np.int64)
    return _PairTerms(radix, len(ny), ny, _flat_tables(tables), N).sums(np.zeros((0, 0)))[0]


def _flat_tables(tables: list[np.ndarray]) -> np.ndarray:
    """The (value, class) tables end to end as float64 counts."""
    return np.concatenate([np.asarray(t, np.float64).reshape(-1) for t in tables])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _mi_factors(tab, tab_at, radix, K, ny, N, coef, arg, lens):
    """coef = c/N and arg = N·c / (#v·#y) of every nonzero cell (v, y) with count c of
    each attribute's (value, class) table (tab from tab_at[a], radix[a] × K), attribute by
    attribute (lens[a] cells): the operations of MI's term c/N · log2(arg) before its
    logarithm (#v: the row's sum, integers: exact). Returns how many terms."""
    e = 0
    for a in range(radix.shape[0]):
        e0 = e
        for v in range(radix[a]):
            o = tab_at[a] + v * K
            nv = 0.0
            for yy in range(K):
                nv += tab[o + yy]
            for yy in range(K):
                c = tab[o + yy]
                if c != 0.0:
                    coef[e] = c / N
                    arg[e] = (N * c) / (nv * ny[yy])
                    e += 1
        lens[a] = e - e0
    return e


@numba.njit(cache=True, nogil=True)
def _tables_from_pairs(tables, pairs_i, pairs_j, radix, K, tab, tab_at, done):
    """Each attribute's (value, class) counts into tab (from tab_at[a], zeros before):
    its first pair's dense (x_i, x_j, y) table (end to end in `tables`) summed over the
    other attribute (integer counts: the bits a count of its own gives); done[a] = True
    for every attribute so made."""
    o = 0
    for p in range(pairs_i.shape[0]):
        i, j = pairs_i[p], pairs_j[p]
        ri, rj = radix[i], radix[j]
        for first in (True, False):  # (x_i's table: summed over w; x_j's: over v)
            a = i if first else j
            if done[a]:
                continue
            for v in range(ri):
                for w in range(rj):
                    at = tab_at[a] + (v if first else w) * K
                    for yy in range(K):
                        tab[at + yy] += tables[o + (v * rj + w) * K + yy]
            done[a] = True
        o += ri * rj * K


@numba.njit(cache=True, nogil=True, inline="always")
def _cmi_term(c, yy, v, w, ti, tj, K, tab, ny, N, coef, arg, e):
    """coef[e] = c / N and arg[e] = #y·c / (#(v, y)·#(w, y)) of a nonzero cell (v, w, y)
    with count c: the operations of the CMI term c/N · log2(arg) before its logarithm."""
    coef[e] = c / N
    arg[e] = (ny[yy] * c) / (tab[ti + v * K + yy] * tab[tj + w * K + yy])


@numba.njit(cache=True, nogil=True)
def _cmi_factors(idx, c, pairs_i, pairs_j, bounds, radix, K, tab, tab_at, ny, N, coef, arg):
    """`_cmi_term` of every listed nonzero cell (pair p's in bounds[p] : bounds[p + 1],
    cell index (v·radix_j + w)·K + y, count c)."""
    for p in range(pairs_i.shape[0]):
        ti, tj, rj = tab_at[pairs_i[p]], tab_at[pairs_j[p]], radix[pairs_j[p]]
        for e in range(bounds[p], bounds[p + 1]):
            yy = idx[e] % K
            vw = idx[e] // K
            _cmi_term(c[e], yy, vw // rj, vw % rj, ti, tj, K, tab, ny, N, coef, arg, e)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _dense_factors(tables, pairs_i, pairs_j, radix, K, tab, tab_at, ny, N, coef, arg, lens,
                   branchless):
    """`_cmi_term` of every nonzero cell of the dense pair tables laid end to end in
    `tables` ((v, w, y) in C order), in that order; lens[p] = pair p's nonzero cells.
    With `branchless` (coef and arg have room for one more) every cell's term is written
    at the next place and kept (the place advanced) only when its count is nonzero — no
    branch to mispredict on the zero pattern, which many classes make irregular (a zero
    cell's 0/0 is overwritten); else zero cells are skipped by a branch. Returns how many
    terms were kept."""
    e = 0
    o = 0
    for p in range(pairs_i.shape[0]):
        ti, tj = tab_at[pairs_i[p]], tab_at[pairs_j[p]]
        ri, rj = radix[pairs_i[p]], radix[pairs_j[p]]
        e0 = e
        if branchless:
            for v in range(ri):
                for w in range(rj):
                    for yy in range(K):
                        c = tables[o]
                        o += 1
                        _cmi_term(np.float64(c), yy, v, w, ti, tj, K, tab, ny, N, coef, arg,
                                  e)
                        e += c != 0
        else:
            for v in range(ri):
                for w in range(rj):
                    for yy in range(K):
                        c = tables[o]
                        o += 1
                        if c != 0:
                            _cmi_term(np.float64(c), yy, v, w, ti, tj, K, tab, ny, N, coef,
                                      arg, e)
                            e += 1
        lens[p] = e - e0
    return e


BRANCHLESS_CLASSES = 8
"""`_dense_factors` writes every cell's term (no branch) from this many classes: letter's
26 classes 0.53 -> 0.44 ms, optdigits' 10 1.04 -> 0.65; with two or three classes the
branch costs less than the zero cells' divisions (splice 3.4 -> 4.3 ms without it)."""


class _PairTerms:
    """MI(X_i; Y) of every attribute and CMI(X_i; X_j | Y) of many pairs in bits, from the
    tables' nonzero cells: the operations of every term before its logarithm
    (`_mi_factors`, `_cmi_term`, compiled: the formula element by element), then one numpy
    log2 over all of them and each attribute's and pair's terms sorted and summed as numpy
    sums a sorted array (`rowops.pairwise_sum`): the bits of one at a time, without a
    dozen numpy calls per attribute or pair (1,830 pairs on splice)."""

    def __init__(self, radix: np.ndarray, K: int, ny: np.ndarray, tab: np.ndarray,
                 N: float) -> None:
        """tab: every attribute's (value, class) counts (radix[a] × K) end to end."""
        self.radix, self.K, self.ny, self.N = np.asarray(radix, dtype=np.int64), K, ny, N
        self.tab = np.asarray(tab, dtype=np.float64)
        self.tab_at = np.zeros(len(self.radix), dtype=np.int64)
        np.cumsum(self.radix[:-1] * K, out=self.tab_at[1:])
        self.pi: list[np.ndarray] = []
        self.pj: list[np.ndarray] = []
        self.coef: list[np.ndarray] = []
        self.arg: list[np.ndarray] = []
        self.lens: list[np.ndarray] = []

    def _args(self, pi, pj) -> tuple:
        return (np.asarray(pi, dtype=np.int64), np.asarray(pj, dtype=np.int64))

    def add(self, i: int, j: int, idx: np.ndarray, c: np.ndarray) -> None:
        """One pair's nonzero cells: indexes (v·radix_j + w)·K + y, counts c."""
        pi, pj = self._args([i], [j])
        c = np.asarray(c, dtype=np.float64)
        coef, arg = np.empty(c.size), np.empty(c.size)
        _cmi_factors(np.asarray(idx, dtype=np.int64), c, pi, pj,
                     np.array([0, c.size], dtype=np.int64), self.radix, self.K, self.tab,
                     self.tab_at, self.ny, self.N, coef, arg)
        self._keep(pi, pj, coef, arg, np.array([c.size], dtype=np.int64))

    def add_dense(self, pairs: list[tuple[int, int, int]], tables: np.ndarray) -> None:
        """Pairs (i, j, cells) whose dense tables lie end to end in `tables`."""
        if not pairs:
            return
        pi, pj = self._args([p[0] for p in pairs], [p[1] for p in pairs])
        e = int(np.count_nonzero(tables))
        coef, arg = np.empty(e + 1), np.empty(e + 1)  # (the nonzero cells' terms, + 1)
        lens = np.empty(len(pairs), dtype=np.int64)
        _dense_factors(tables, pi, pj, self.radix, self.K, self.tab, self.tab_at, self.ny,
                       self.N, coef, arg, lens, self.K >= BRANCHLESS_CLASSES)
        self._keep(pi, pj, coef[:e], arg[:e], lens)

    def _keep(self, pi, pj, coef, arg, lens) -> None:
        self.pi.append(pi)
        self.pj.append(pj)
        self.coef.append(coef)
        self.arg.append(arg)
        self.lens.append(lens)

    def sums(self, cmi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(MI of every attribute, cmi with cmi[i, j] = cmi[j, i] = each added pair's CMI);
        an empty MI when N = 0."""
        from workbench.rowops import sorted_segment_sums  # numba: only when used

        d = len(self.radix) if self.N > 0 else 0
        size = int(self.tab.size) if d else 0
        coef, arg = np.empty(size), np.empty(size)
        lens = np.empty(d, dtype=np.int64)
        e = _mi_factors(self.tab, self.tab_at, self.radix[:d], self.K, self.ny, self.N,
                        coef, arg, lens)
        one = lambda parts: parts[0] if len(parts) == 1 else np.concatenate(parts)  # noqa: E731
        lens = one([lens] + self.lens)
        pairs_i, pairs_j = one([_NO_PAIRS] + self.pi), one([_NO_PAIRS] + self.pj)
        bounds = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=bounds[1:])
        coef, arg = one([coef[:e]] + self.coef), one([arg[:e]] + self.arg)
        terms = coef * np.log2(arg)  # (numpy's log2: the bits the formula always had)
        sums = sorted_segment_sums(terms, bounds)
        cmi[pairs_i, pairs_j] = sums[d:]
        cmi[pairs_j, pairs_i] = sums[d:]
        return sums[:d], cmi


_NO_PAIRS = np.zeros(0, dtype=np.int64)


def mutual_information(X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int) -> np.ndarray:
    """MI(X_i; Y) in bits for every column of int codes X (all values valid, < cards)."""
    return StructureCounts(cards, K, pairs=False).add(X, y).mutual_information()


_PAIR_BATCH_CELLS = 1 << 23  # dense pair cells counted per `BlockStore` (one batch of pairs)


def _batches(sizes: list[int]) -> list[tuple[int, int]]:
    """Consecutive [start, stop) runs of `sizes` of at most _PAIR_BATCH_CELLS cells (or one)."""
    out, start = [], 0
    while start < len(sizes):
        stop, total = start, 0
        while stop < len(sizes) and (stop == start or total + sizes[stop] <= _PAIR_BATCH_CELLS):
            total += sizes[stop]
            stop += 1
        out.append((start, stop))
        start = stop
    return out


def _count_blocks(codes_t: np.ndarray, y: np.ndarray, K: int, cards: np.ndarray,
                  sets: list[tuple[int, ...]], cells: list[int]) -> np.ndarray:
    """The dense (x_a, …, y) tables of the attribute `sets` (`cells` each, C order) laid
    end to end (an integer array, perhaps a view of the store's), counted over the rows (codes_t: the codes attribute-major) by the
    counting layer (`BlockStore`: its bit-set kernels, 9× a plain increment loop over
    connect-4's 861 pairs)."""
    if not sets:
        return np.zeros(0, dtype=np.int64)
    store = laid_out(cards, K, np.array(sets, dtype=np.int64), len(y))  # (kept layouts)
    ids = np.arange(len(sets), dtype=np.int64)
    store.add(codes_t, y, columns=True)
    cells = np.asarray(cells, dtype=np.int64)
    if (store.kind[ids] == KIND_DENSE).all() and \
            np.array_equal(store.off[ids], store.off[ids[0]] + np.cumsum(cells) - cells):
        o = int(store.off[ids[0]])  # (the blocks lie end to end in the store: no copy)
        return store.dense[o: o + int(cells.sum())]
    return np.concatenate([store.block(int(b)).reshape(-1) for b in ids])


def _count_dense(codes_t: np.ndarray, y: np.ndarray, K: int, cards: np.ndarray,
                 pairs: list[tuple[int, int, int]]) -> np.ndarray:
    """The dense tables of `pairs` ((i, j, cells), i < j, each (x_i, x_j, y) in C order)
    laid end to end (`_count_blocks`)."""
    return _count_blocks(codes_t, y, K, cards, [(i, j) for i, j, _ in pairs],
                         [c for _, _, c in pairs])


def _attribute_major(X: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """The codes attribute-major in the counting layer's narrowest type."""
    return np.ascontiguousarray(X.T, dtype=code_dtype(cards))


def conditional_mutual_information(
    X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int,
    tables: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Symmetric (d, d) matrix of CMI(X_i; X_j | Y) in bits (diagonal 0); `tables`: the
    (value, class) counts of every attribute when the caller has them (MI's)."""
    return mi_and_cmi(X, y, cards, K, tables)[1]


def mi_and_cmi(
    X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int,
    tables: list[np.ndarray] | None = None, class_counts: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """MI(X_i; Y) per attribute and the symmetric (d, d) CMI(X_i; X_j | Y) in bits from one
    count of the rows; `tables`: the (value, class) counts of every attribute, and
    `class_counts` the rows of each class, when the caller has them.

    Pair tables are counted densely in one pass over the rows per batch of pairs
    (`BlockStore`); a pair whose table would be much larger than the data (ID-like
    attributes) is counted sparsely with np.unique instead. Without `tables`, an
    attribute's (value, class) counts are its first dense pair table of the first batch
    summed over the other attribute (integers: the counts a count of its own gives), and
    counted on their own only for attributes in no such pair.

    A pair with a constant attribute (one code: a single-valued attribute, e.g. one MDL
    leaves without cuts) is not counted: each of its terms would be c/N · log2(#y·c /
    (c·#y)) = c/N · log2(1) = +0 exactly (the two products are the same IEEE product), so
    its CMI is the +0 the matrix starts with — the bits a count gives, for none of its
    cost (adult: 13 of 91 pairs).
    """
    n, d = X.shape
    cmi = np.zeros((d, d))
    X = np.asarray(X)  # (integer codes of any width: each column widened where used)
    y = np.ascontiguousarray(y, dtype=np.int64)
    cards = np.asarray(cards, dtype=np.int64)
    ny = (count_classes(y, K) if class_counts is None else class_counts).astype(np.float64)
    dense: list[tuple[int, int, int]] = []
    sparse: list[tuple[int, int]] = []
    dense_limit = max(_DENSE_ROWS_CELLS, 4 * n)
    card = cards.tolist()  # (Python ints: a numpy scalar per test cost adult 40 µs)
    for i in range(d - 1 if n else 0):
        for j in range(i + 1, d):
            if card[i] == 1 or card[j] == 1:
                continue  # (a constant attribute: CMI 0, see the docstring)
            cells = card[i] * card[j] * K
            if cells <= dense_limit:
                dense.append((i, j, cells))
            else:
                sparse.append((i, j))
    codes_t = _attribute_major(X, cards) if dense else None
    batches = _batches([p[2] for p in dense])
    first = _count_dense(codes_t, y, K, cards, dense[slice(*batches[0])]) if dense else None
    if tables is None:
        tab = _values_from_pairs(X, y, cards, K, dense[slice(*batches[0])] if dense else [],
                                 first, ny)
    else:
        tab = _flat_tables(tables)
    terms = _PairTerms(cards, K, ny, tab, float(n))
    if n == 0 or d < 2:
        mi = terms.sums(cmi)[0]
        return (mi if n else np.zeros(d)), cmi
    for i, j in sparse:
        key = (X[:, i].astype(np.int64) * int(cards[j]) + X[:, j]) * K + y
        idx, cnt = np.unique(key, return_counts=True)
        terms.add(i, j, idx, cnt.astype(np.float64))
    for b, (start, stop) in enumerate(batches):
        batch = dense[start:stop]
        terms.add_dense(batch, first if b == 0 else _count_dense(codes_t, y, K, cards, batch))
    return terms.sums(cmi)


def _values_from_pairs(X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int,
                       pairs: list[tuple[int, int, int]], tables: np.ndarray | None,
                       ny: np.ndarray) -> np.ndarray:
    """Every attribute's (value, class) counts end to end (float64): from its first pair
    among `pairs` (dense (x_i, x_j, y) tables end to end in `tables`) summed over the other
    attribute (`_tables_from_pairs`), else counted (np.bincount) — a single-valued
    attribute's are the class counts `ny` (every row has its one value)."""
    d = len(cards)
    tab_at = np.zeros(d, dtype=np.int64)
    np.cumsum(cards[:-1] * K, out=tab_at[1:])
    tab = np.zeros(int(cards.sum()) * K)
    done = np.zeros(d, dtype=bool)
    if pairs:
        _tables_from_pairs(tables, np.array([p[0] for p in pairs], dtype=np.int64),
                           np.array([p[1] for p in pairs], dtype=np.int64), cards, K, tab,
                           tab_at, done)
    for a in np.flatnonzero(~done):
        tab[tab_at[a]: tab_at[a] + int(cards[a]) * K] = ny if cards[a] == 1 else np.bincount(
            X[:, a].astype(np.int64) * K + y, minlength=int(cards[a]) * K)
    return tab


class StructureCounts:
    """The counts behind the structure, additive over chunks of rows (`add`) and partial
    counts (`merge`): the class counts, every attribute's (value, class) table and, with
    `pairs`, every pair's (value, value, class) table — dense up to `_DENSE_PAIR_CELLS`
    cells, sparse (sorted keys, counts) above. Values are codes < `radix` (a missing value
    has its own code). `mutual_information` and `conditional_mutual_information` give the
    bits the in-memory functions give on the same rows: the same nonzero cells, the same
    terms, the same sorted sums."""

    def __init__(self, radix: np.ndarray, K: int, pairs: bool = True) -> None:
        self.radix = np.maximum(np.asarray(radix, dtype=np.int64), 1)
        self.K = int(K)
        self.n = 0
        self.class_counts = np.zeros(self.K, dtype=np.int64)
        self.values = [np.zeros((int(r), self.K), dtype=np.int64) for r in self.radix]
        self.dense: list[tuple[int, int, int]] = []  # (i, j, cells), laid end to end
        self.sparse: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        d = len(self.radix)
        if pairs:
            for i in range(d - 1):
                for j in range(i + 1, d):
                    cells = int(self.radix[i]) * int(self.radix[j]) * self.K
                    if cells <= _DENSE_PAIR_CELLS:
                        self.dense.append((i, j, cells))
                    else:
                        self.sparse[(i, j)] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.pair_counts = np.zeros(sum(p[2] for p in self.dense), dtype=np.int64)

    def add(self, X: np.ndarray, y: np.ndarray) -> "StructureCounts":
        """Count rows: X (n, d) codes, y (n,) classes."""
        X = np.asarray(X, dtype=np.int64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        if len(y) == 0:
            return self
        K = self.K
        self.n += len(y)
        self.class_counts += count_classes(y, K)
        codes_t = _attribute_major(X, self.radix)
        sizes = [int(r) * K for r in self.radix]
        out = _count_blocks(codes_t, y, K, self.radix, [(i,) for i in range(len(sizes))],
                            sizes)
        for v, part in zip(self.values, np.split(out, np.cumsum(sizes)[:-1])):
            v += part.reshape(v.shape)
        off = 0
        for start, stop in _batches([p[2] for p in self.dense]):
            out = _count_dense(codes_t, y, K, self.radix, self.dense[start:stop])
            self.pair_counts[off: off + len(out)] += out
            off += len(out)
        for (i, j), (keys, counts) in self.sparse.items():
            u, c = np.unique((X[:, i] * self.radix[j] + X[:, j]) * K + y, return_counts=True)
            self.sparse[(i, j)] = merge_sorted_counts(keys, counts, u, c)
        return self

    def merge(self, other: "StructureCounts", sign: int = 1) -> "StructureCounts":
        """Add (`sign` −1: subtract) another partial count over the same attributes."""
        self.n += sign * other.n
        self.class_counts += sign * other.class_counts
        for a, b in zip(self.values, other.values):
            a += sign * b
        self.pair_counts += sign * other.pair_counts
        for key, (k, c) in other.sparse.items():
            self.sparse[key] = merge_sorted_counts(*self.sparse[key], k, c, sign)
        return self

    def mutual_information(self) -> np.ndarray:
        """MI(X_i; Y) in bits per attribute."""
        if self.n == 0:
            return np.zeros(len(self.radix))
        ny = self.class_counts.astype(np.float64)
        return _mutual_information(self.values, ny, float(self.n))

    def conditional_mutual_information(self) -> np.ndarray:
        """Symmetric (d, d) CMI(X_i; X_j | Y) in bits (0 without pair counts)."""
        d = len(self.radix)
        cmi = np.zeros((d, d))
        if self.n == 0 or d < 2:
            return cmi
        N, K = float(self.n), self.K
        ny = self.class_counts.astype(np.float64)
        terms = _PairTerms(self.radix, K, ny, _flat_tables(self.values), N)
        terms.add_dense(self.dense, self.pair_counts)
        for (i, j), (idx, c) in self.sparse.items():
            terms.add(i, j, idx, c)
        return terms.sums(cmi)[1]

    @property
    def nbytes(self) -> int:
        """Bytes held by the tables."""
        return int(self.class_counts.nbytes + sum(v.nbytes for v in self.values)
                   + self.pair_counts.nbytes
                   + sum(k.nbytes + c.nbytes for k, c in self.sparse.values()))


def mi_order(mi: np.ndarray) -> np.ndarray:
    """Attribute indices by decreasing MI; exact ties keep header order (stable sort)."""
    return np.argsort(-np.asarray(mi, dtype=np.float64), kind="stable")


def kdb_parents(order: np.ndarray, cmi: np.ndarray, k: int) -> list[list[int]]:
    """KDB parent lists (indexed by attribute): for L_i the min(i−1, k) earlier attributes of
    L with the largest CMI(L_i; L_j | Y), ties → earlier in L, listed in that order
    (`_kdb_choices`, compiled: a numpy sort per attribute cost adult's structure 54 µs)."""
    order = np.asarray(order, dtype=np.int64)
    d = len(order)
    k = max(0, min(int(k), d - 1))
    out = np.empty((d, k), dtype=np.int64)
    _kdb_choices(order, np.asarray(cmi, dtype=np.float64), k, out)
    parents: list[list[int]] = [[] for _ in range(d)]
    for pos, (a, row) in enumerate(zip(order.tolist(), out.tolist())):
        parents[a] = row[:min(pos, k)]
    return parents


@numba.njit(cache=True, nogil=True)
def _kdb_choices(order, cmi, k, out):
    """out[pos, :min(pos, k)] = the earlier attributes of `order` with the largest
    CMI(order[pos]; · | Y), ties → earlier in the order: a stable sort of the negated
    values (merge sort, as numpy's stable argsort)."""
    for pos in range(1, order.shape[0]):
        a = order[pos]
        neg = np.empty(pos)
        for q in range(pos):
            neg[q] = -cmi[a, order[q]]
        pick = np.argsort(neg, kind="mergesort")
        for t in range(min(pos, k)):
            out[pos, t] = order[pick[t]]


def tan_parents(cmi: np.ndarray) -> list[list[int]]:
    """TAN tree by Prim's maximum spanning tree on CMI, rooted at attribute 0 (SPEC §4)."""
    d = cmi.shape[0]
    parents: list[list[int]] = [[] for _ in range(d)]
    if d < 2:
        return parents
    in_tree = np.zeros(d, dtype=bool)
    in_tree[0] = True
    w = cmi[0].astype(np.float64).copy()
    par = np.zeros(d, dtype=np.int64)
    for _ in range(d - 1):
        remaining = np.flatnonzero(~in_tree)
        new = int(remaining[np.argmax(w[remaining])])  # first maximum = lowest index
        in_tree[new] = True
        parents[new] = [int(par[new])]
        for a in np.flatnonzero(~in_tree):
            if cmi[new, a] > w[a]:
                w[a] = cmi[new, a]
                par[a] = new
    return parents
