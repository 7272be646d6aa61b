"""Report stage: W/D/L tables, figures and paper agreement rendered from stored results.

Entry point: `render_report(run_dir)` (see `workbench.report.render`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["render_report"]


def render_report(run_dir: str | Path, out_dir: str | Path | None = None, **kwargs: Any) -> Path:
    """Render RUN_DIR/report (lazy wrapper of `workbench.report.render.render_report`)."""
    from workbench.report.render import render_report as _render

    return _render(run_dir, out_dir, **kwargs)
