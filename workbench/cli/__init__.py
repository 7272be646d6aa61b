"""Subcommands of `python -m workbench` (one module each) and their shared argument helpers."""

from __future__ import annotations


def parse_overrides(items: list[str]) -> dict:
    """``["m=0.5", "weighting=null"]`` → ``{"m": 0.5, "weighting": None}`` (YAML values read
    by `workbench.yamlnum`, as configs are: ``1e-3`` is a number)."""
    import yaml

    from workbench import yamlnum
    from workbench.errors import WorkbenchError

    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise WorkbenchError(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key] = yamlnum.load(value) if value.strip() else None
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
            raise WorkbenchError(f"--set {item!r}: cannot parse value: {first}") from None
    return out
