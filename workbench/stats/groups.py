"""Collections of data sets: all / large / medium / small (PAKDD 2013) plus custom groups.

A data set's size group is the paper's group when its slug is in the catalog
(`workbench.data.catalog.CATALOG`), otherwise `size_group(n_instances)`: large = more than
10,000 instances, medium = 1,000 < n ≤ 10,000, small = n ≤ 1,000. Custom collections come
from the report options of the config, e.g. ``collections: {mine: [iris, vote]}``; only the
data sets of a custom collection that were actually run are used.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from workbench.data.catalog import CATALOG, size_group
from workbench.errors import ConfigError

SIZE_GROUPS = ("large", "medium", "small")
STANDARD_COLLECTIONS = ("all",) + SIZE_GROUPS


def _size_group(n: int) -> str:
    """The paper's size group of a data set with ``n`` instances (fallback rule)."""
    return str(size_group(int(n)))


def catalog_groups() -> dict[str, str]:
    """Catalog slug → paper size group."""
    return {str(e.slug): str(e.group) for e in CATALOG}


def dataset_groups(summary: pd.DataFrame) -> dict[str, str]:
    """Data set → size group for every data set in the results summary."""
    known = catalog_groups()
    out: dict[str, str] = {}
    sizes = summary.groupby("dataset", sort=True)["n_instances"].max()
    for name, n in sizes.items():
        name = str(name)
        if name in known:
            out[name] = known[name]
        elif pd.notna(n):
            out[name] = _size_group(int(n))
        else:
            out[name] = "unknown"
    return out


def collections(
    summary: pd.DataFrame, custom: Mapping[str, Sequence[str]] | None = None
) -> dict[str, list[str]]:
    """Collection name → sorted data sets run, in the order all, large, medium, small, custom.

    Size collections with no data set run are still listed (empty). Custom names may not
    reuse a standard name; a custom entry must be a list of data set names.
    """
    groups = dataset_groups(summary)
    out: dict[str, list[str]] = {"all": sorted(groups)}
    for g in SIZE_GROUPS:
        out[g] = sorted(d for d, grp in groups.items() if grp == g)
    for name, members in (custom or {}).items():
        name = str(name)
        if name in out:
            raise ConfigError(
                f"report.collections.{name}: name clashes with a standard collection"
            )
        if isinstance(members, str) or not isinstance(members, Sequence):
            raise ConfigError(
                f"report.collections.{name}: expected a list of data set names, "
                f"got {type(members).__name__}"
            )
        wanted = {str(m) for m in members}
        out[name] = sorted(d for d in groups if d in wanted)
    return out
