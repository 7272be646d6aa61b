"""Build hook: a wheel carries the built-in configs, the embedded data sets and the papers'
published cells and reproductions (`workbench.resources.BUNDLED_PATTERNS`) as
``workbench/_bundled/``, so an installed package runs ``python -m workbench run pakdd13``
from any directory. An editable install reads them from the checkout instead."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _bundled_patterns() -> dict[str, tuple[str, ...]]:
    """`BUNDLED_PATTERNS` read from workbench/resources.py without importing the package."""
    tree = ast.parse((HERE / "workbench" / "resources.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == \
                "BUNDLED_PATTERNS":
            return ast.literal_eval(node.value)
    raise RuntimeError("BUNDLED_PATTERNS not found in workbench/resources.py")


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "workbench" / "_bundled"
        for folder, patterns in _bundled_patterns().items():
            for pattern in patterns:
                for src in sorted((HERE / folder).glob(pattern)):
                    dst = target / src.relative_to(HERE)
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dst)


setup(cmdclass={"build_py": BuildWithData})
