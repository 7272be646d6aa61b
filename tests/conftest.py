"""Shared test fixtures: paths to the repository and to ../shared (read-only data)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_DATASETS = SHARED / "datasets"
FETCHED = SHARED_DATASETS / "fetched"
EMBEDDED = REPO / "datasets"

needs_shared = pytest.mark.skipif(
    not FETCHED.is_dir(), reason="../shared/datasets/fetched is not beside the checkout"
)


def shared_file(slug: str) -> Path:
    """Path of a data set in ../shared (registry or fetched); skips the test if absent."""
    for folder in ("registry", "fetched"):
        p = SHARED_DATASETS / folder / f"{slug}.arff.gz"
        if p.is_file():
            return p
    pytest.skip(f"{slug} not available in ../shared/datasets")
