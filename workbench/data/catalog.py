"""The paper's 71 data sets (Zaidi & Webb, PAKDD 2013, Table 1) and where to find them.

Each `CatalogEntry` carries the counts *as printed in the paper* (instances, attributes
including the class, classes) and its size group (SPEC §3 "Collections"): large = more
than 10,000 instances (12 sets), medium = 1,000 < n ≤ 10,000 (19), small = n ≤ 1,000 (40;
LED and German with exactly 1,000 are small). Slugs are the file names used in
``datasets/`` and ``../shared/datasets`` (``<slug>.arff.gz``).

Files are looked up along `search_path()`: the project's ``datasets/`` directory
(embedded copies), then every directory in ``$WORKBENCH_DATA`` (``os.pathsep``-separated),
then any extra directories the caller passes (e.g. ``--data-dir``).

Aliases: a few common alternative names (Weka / UCI file names) resolve to the catalog
slug, e.g. ``vote`` → ``house-votes-84``, ``breast-w`` → ``breast-cancer-w``,
``colic`` → ``horse-colic``, ``heart-h`` → ``hungarian``, ``cmc`` → ``contraceptive-mc``,
``diabetes`` → ``pima``, ``credit-g`` → ``german``; see `ALIASES`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

from workbench.data.arff import load_arff
from workbench.data.sources import load_table
from workbench.data.dataset import Dataset
from workbench import resources
from workbench.resources import cache_dir
from workbench.errors import WorkbenchError

__all__ = [
    "CatalogEntry",
    "CATALOG",
    "OTHER_PAPERS",
    "ALIASES",
    "size_group",
    "get_entry",
    "resolve_slug",
    "search_path",
    "find_dataset",
    "load_dataset",
    "PROJECT_DATASETS",
]

Group = Literal["large", "medium", "small"]

PROJECT_DATASETS = resources.DATASETS
"""The embedded data sets (``<repo>/datasets``, or the installed package's copy)."""


def size_group(n: int) -> Group:
    """SPEC §3: "large" if n > 10,000; "medium" if 1,000 < n ≤ 10,000; else "small"."""
    if n > 10_000:
        return "large"
    if n > 1_000:
        return "medium"
    return "small"


@dataclass(frozen=True)
class CatalogEntry:
    """One row of the paper's Table 1 (counts as published; attributes include the class)."""

    slug: str
    name: str
    instances: int
    attributes: int
    classes: int
    group: Group


def _e(slug: str, name: str, instances: int, attributes: int, classes: int) -> CatalogEntry:
    return CatalogEntry(slug, name, instances, attributes, classes, size_group(instances))


CATALOG: tuple[CatalogEntry, ...] = (
    _e("abalone", "Abalone", 4177, 9, 3),
    _e("adult", "Adult", 48842, 15, 2),
    _e("anneal", "Annealing", 898, 39, 6),
    _e("audiology", "Audiology", 226, 70, 24),
    _e("autos", "Auto Imports", 205, 26, 7),
    _e("balance-scale", "Balance Scale", 625, 5, 3),
    _e("breast-cancer-w", "Breast Cancer (Wisconsin)", 699, 10, 2),
    _e("bupa", "Liver Disorders (Bupa)", 345, 7, 2),
    _e("car", "Car Evaluation", 1728, 8, 4),
    _e("census-income", "Census-Income (KDD)", 299285, 40, 2),
    _e("chess", "Chess", 551, 40, 2),
    _e("connect-4", "Connect-4 Opening", 67557, 43, 3),
    _e("contact-lenses", "Contact-lenses", 24, 5, 3),
    _e("contraceptive-mc", "Contraceptive Method Choice", 1473, 10, 3),
    _e("covtype", "Covertype", 581012, 55, 7),
    _e("credit-a", "Credit Screening", 690, 16, 2),
    _e("cylinder-bands", "Cylinder", 540, 40, 2),
    _e("dermatology", "Dermatology", 366, 35, 6),
    _e("echocardiogram", "Echocardiogram", 131, 7, 2),
    _e("german", "German", 1000, 21, 2),
    _e("glass", "Glass Identification", 214, 10, 3),
    _e("haberman", "Haberman's Survival", 306, 4, 2),
    _e("heart-c", "Heart Disease (Cleveland)", 303, 14, 2),
    _e("hepatitis", "Hepatitis", 155, 20, 2),
    _e("horse-colic", "Horse Colic", 368, 22, 2),
    _e("house-votes-84", "House Votes 84", 435, 17, 2),
    _e("hungarian", "Hungarian", 294, 14, 2),
    _e("hypothyroid", "Hypothyroid (Garavan)", 3772, 30, 4),
    _e("ionosphere", "Ionosphere", 351, 35, 2),
    _e("iris", "Iris Classification", 150, 5, 3),
    _e("kr-vs-kp", "King-rook-vs-king-pawn", 3196, 37, 2),
    _e("labor", "Labor Negotiations", 57, 17, 2),
    _e("led", "LED", 1000, 8, 10),
    _e("letter", "Letter Recognition", 20000, 17, 26),
    _e("localization", "Localization", 164860, 7, 3),
    _e("lung-cancer", "Lung Cancer", 32, 57, 3),
    _e("lymphography", "Lymphography", 148, 19, 4),
    _e("magic", "MAGIC Gamma Telescope", 19020, 11, 2),
    _e("mushroom", "Mushrooms", 8124, 23, 2),
    _e("musk1", "Musk1", 476, 167, 2),
    _e("new-thyroid", "New-Thyroid", 215, 6, 3),
    _e("nursery", "Nursery", 12960, 9, 5),
    _e("optdigits", "Optical Digits", 5620, 49, 10),
    _e("page-blocks", "Page Blocks Classification", 5473, 11, 5),
    _e("pendigits", "Pen Digits", 10992, 17, 10),
    _e("phoneme", "Nettalk (Phoneme)", 5438, 8, 52),
    _e("pima", "Pima Indians Diabetes", 768, 9, 2),
    _e("poker-hand", "Poker-hand", 1025010, 11, 10),
    _e("post-operative", "Postoperative Patient", 90, 9, 3),
    _e("primary-tumor", "Primary Tumor", 339, 18, 22),
    _e("promoters", "Promoter Gene Sequences", 106, 58, 2),
    _e("satellite", "Satellite", 6435, 37, 6),
    _e("segment", "Segment", 2310, 20, 7),
    _e("shuttle", "Statlog (Shuttle)", 58000, 10, 7),
    _e("sick", "Sick-euthyroid", 3772, 30, 2),
    _e("sign", "Sign", 12546, 9, 3),
    _e("sonar", "Sonar Classification", 208, 61, 2),
    _e("spambase", "Spambase", 4601, 58, 2),
    _e("splice", "Splice-junction Gene Sequences", 3190, 62, 3),
    _e("syncon", "Syncon", 600, 61, 6),
    _e("tae", "Teaching Assistant Evaluation", 151, 6, 3),
    _e("thyroid", "Thyroid", 9169, 30, 20),
    _e("tic-tac-toe", "Tic-Tac-Toe Endgame", 958, 10, 2),
    _e("vehicle", "Vehicle", 846, 19, 4),
    _e("volcanoes", "Volcanoes", 1520, 4, 4),
    _e("vowel", "Vowel", 990, 14, 11),
    _e("wall-following", "Wall-following", 5456, 25, 4),
    _e("waveform-5000", "Waveform-5000", 5000, 41, 3),
    _e("wine", "Wine Recognition", 178, 14, 3),
    _e("yeast", "yeast", 1484, 9, 10),
    _e("zoo", "Zoo", 101, 17, 7),
)

OTHER_PAPERS: tuple[CatalogEntry, ...] = (
    # in Chen, Martinez & Webb (PAKDD 2014), Table 1, but not in PAKDD 2013's (counts as
    # printed there); not part of `all` or of PAKDD 2013's size groups
    _e("soybean", "Soybean (large)", 683, 36, 19),
    _e("musk2", "Musk2", 6598, 167, 2),
    _e("ipums-la-99", "IPUMS Census LA 1999", 88443, 61, 19),
    _e("waveform-100000", "Waveform (100,000 generated instances)", 100000, 22, 3),
    _e("record-linkage", "Record Linkage Comparison Patterns", 5749132, 12, 2),
    # Martinez et al. (JMLR 2016), Table 7 (as reconstructed in ../shared/published: rows,
    # attributes + the class, classes); its satellite and splice are other data sets than
    # PAKDD 2013's (8.7 M and 50 M rows), hence their own slugs
    _e("uspsextended", "USPSExtended", 341500, 677, 9),
    _e("mitfaceseta", "MITFaceSetA", 474100, 362, 2),
    _e("mitfacesetb", "MITFaceSetB", 489400, 362, 2),
    _e("msdyearprediction", "MSDYearPrediction", 515345, 91, 90),
    _e("mitfacesetc", "MITFaceSetC", 839300, 362, 2),
    _e("uscensus1990", "USCensus1990", 2458300, 68, 4),
    _e("pamap2", "PAMAP2", 3850500, 55, 19),
    _e("kddcup", "KDD Cup 99", 5209500, 42, 40),
    _e("mnist8m", "mnist8m", 8100000, 785, 10),
    _e("satellite-8m", "satellite (JMLR 2016)", 8705200, 139, 24),
    _e("splice-50m", "splice (JMLR 2016)", 50000000, 142, 2),
)
"""Data sets other source papers use, so configs can name them (and list them as missing)."""

_BY_SLUG: dict[str, CatalogEntry] = {e.slug: e for e in CATALOG + OTHER_PAPERS}

ALIASES: dict[str, str] = {
    "vote": "house-votes-84",
    "votes": "house-votes-84",
    "breast-w": "breast-cancer-w",
    "colic": "horse-colic",
    "heart-h": "hungarian",
    "heart-cleveland": "heart-c",
    "cmc": "contraceptive-mc",
    "liver-disorders": "bupa",
    "diabetes": "pima",
    "credit-g": "german",
    "lymph": "lymphography",
    "waveform": "waveform-5000",
    "poker": "poker-hand",
    "nettalk": "phoneme",
    "bands": "cylinder-bands",
    "cylinder": "cylinder-bands",
    "census": "census-income",
    "linkage": "record-linkage",
    "covertype": "covtype",
    "satimage": "satellite",
    "page-blocks-classification": "page-blocks",
    "letter-recognition": "letter",
    "hypothyroid-garavan": "hypothyroid",
    "sick-euthyroid": "sick",
    "balance": "balance-scale",
    "kr-vs-k-pawn": "kr-vs-kp",
    # names as PAKDD 2014's Table 1 prints them
    "labor-negotiations": "labor",
    "teaching-ae": "tae",
    "glass-id": "glass",
    "audio": "audiology",
    "heart-disease-c": "heart-c",
    "pima-ind-diabetes": "pima",
    "splice-c4.5": "splice",
    "mushrooms": "mushroom",
    "letter-recog": "letter",
    "ipums.la.99": "ipums-la-99",
}
"""Alternative names → catalog slug (Weka / UCI file names)."""


def resolve_slug(name: str) -> str:
    """Catalog slug for `name` (case-insensitive; aliases resolved); unknown names pass through."""
    key = name.strip().lower()
    return ALIASES.get(key, key)


def get_entry(name: str) -> CatalogEntry | None:
    """The catalog entry for a slug or alias, or None."""
    return _BY_SLUG.get(resolve_slug(name))


def search_path(extra_dirs: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """Directories searched for data sets, in order: project ``datasets/``,
    ``$WORKBENCH_DATA`` entries, `extra_dirs`, then the download cache of ``fetch``
    (`resources.cache_dir`)."""
    dirs = [PROJECT_DATASETS]
    env = os.environ.get("WORKBENCH_DATA", "")
    dirs += [Path(p).expanduser() for p in env.split(os.pathsep) if p.strip()]
    dirs += [Path(p).expanduser() for p in extra_dirs]
    return dirs + [cache_dir()]


SUFFIXES = (".arff.gz", ".arff", ".parquet", ".csv", ".csv.gz")
"""A data set's file names along the search path, in the order tried in each directory
(Parquet and CSV for data converted elsewhere or too big for ARFF, e.g. ``fetch mnist8m``)."""


def find_dataset(slug: str, extra_dirs: Iterable[str | os.PathLike] = ()) -> Path | None:
    """First ``<slug>`` + one of `SUFFIXES` along `search_path`, or None."""
    slug = resolve_slug(slug)
    for directory in search_path(extra_dirs):
        for suffix in SUFFIXES:
            candidate = directory / f"{slug}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def _looks_like_path(text: str) -> bool:
    lower = text.lower()
    return (
        os.sep in text
        or (os.altsep is not None and os.altsep in text)
        or lower.endswith((".arff", ".arff.gz", ".csv", ".csv.gz", ".parquet", ".pq"))
    )


def load_dataset(
    slug_or_path: str | os.PathLike, extra_dirs: Iterable[str | os.PathLike] = ()
) -> Dataset:
    """Load a data set by catalog slug / alias (searched along `search_path`) or by file path.

    Raises `WorkbenchError` saying where it looked when the data set cannot be found.
    """
    extra_dirs = list(extra_dirs)
    text = os.fspath(slug_or_path)
    if isinstance(slug_or_path, Path) or _looks_like_path(text):
        path = Path(text).expanduser()
        if not path.is_file():
            raise WorkbenchError(f"{path}: no such data file")
        return load_table(path)
    slug = resolve_slug(text)
    path = find_dataset(slug, extra_dirs)
    if path is not None:
        if path.name.endswith((".arff", ".arff.gz")):
            return load_arff(path, name=slug)
        return load_table(path).replace(name=slug)
    where = ", ".join(str(d) for d in search_path(extra_dirs))
    if slug in _BY_SLUG:
        what = f"data set '{slug}' ({_BY_SLUG[slug].name}) not found"
    else:
        what = f"unknown data set '{text}' (not in the catalog and no such file)"
    from workbench.data.fetch import has_source  # the download code: only for this hint
    hint = (f"; or download it: workbench fetch {slug}" if has_source(slug) else "")
    raise WorkbenchError(
        f"{what}: looked for {' / '.join(slug + s for s in SUFFIXES)} in {where} "
        f"(add directories with $WORKBENCH_DATA or --data-dir{hint})"
    )


def verify(slug: str, path: Path) -> tuple[str, str]:
    """Whether the file `path` of data set `slug` holds the content the reproductions used:
    ``("ok" | "mismatch" | "no checksum", detail)`` (the content checksum of
    `workbench.data.content` against ``content.json``; for a catalog copy of only a file's
    first rows, e.g. poker-hand's training part, those rows)."""
    import numpy as np

    from workbench.data.content import content_checksum, short
    from workbench.data.recipes import catalog_content

    want = catalog_content().get(resolve_slug(slug))
    if want is None:
        return "no checksum", "the catalog has no reference copy of it"
    if path.name.endswith((".parquet", ".pq")):
        return "no checksum", "a Parquet file (only ARFF and CSV copies are checked)"
    try:
        data = load_arff(path) if path.name.endswith((".arff", ".arff.gz")) \
            else load_table(path)
    except WorkbenchError as exc:
        return "mismatch", f"unreadable: {exc}"
    part, what = data, ""
    if data.n_instances > want["rows"] and want.get("first_rows"):
        part = data.take(np.arange(want["rows"]))
        what = f" (its first {want['rows']:,} rows, the catalog's training part)"
    got = content_checksum(part)
    if got == want["checksum"]:
        return "ok", f"{data.n_instances:,} rows{what}"
    return "mismatch", (f"content {short(got)} ({part.n_instances:,} rows){what}, the "
                        f"catalog's {short(want['checksum'])} ({want['rows']:,} rows)")
