"""The report being written: Markdown blocks in order, numbered figures, and named slots
that a later section fills (the agreement headline goes under the Run section)."""

from __future__ import annotations

from pathlib import Path


class Document:
    """Accumulates Markdown; knows the output folder."""

    def __init__(self, out: Path):
        self.out = out
        self.md: list[str] = []
        self.n_figures = 0
        self._slots: dict[str, int] = {}

    def add(self, *blocks: str) -> None:
        for b in blocks:
            self.md.append(b.rstrip("\n") + "\n")

    def slot(self, name: str) -> None:
        """Reserve the current position for `fill(name, …)`; empty if never filled."""
        self._slots[name] = len(self.md)
        self.md.append("")

    def fill(self, name: str, block: str) -> None:
        """Put `block` where `slot(name)` was reserved."""
        self.md[self._slots[name]] = block.rstrip("\n") + "\n"

    def place(self, fig, stem: str, caption: str) -> None:
        """Save `fig` as figures/<stem>.png and .pdf and add it under the next number."""
        from workbench.report import figures as fg

        fg.save_figure(fig, self.out / "figures" / stem)
        self.n_figures += 1
        rel = f"figures/{stem}.png"
        self.add(f"![Figure {self.n_figures}]({rel})\n_Figure {self.n_figures}. {caption}_ "
                 f"(PDF: [figures/{stem}.pdf](figures/{stem}.pdf))")

    def text(self) -> str:
        """The Markdown (unfilled slots leave nothing)."""
        return "\n".join(block for block in self.md if block)
