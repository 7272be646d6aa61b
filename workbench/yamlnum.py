"""YAML as users type it: every float spelling is a number.

PyYAML follows YAML 1.1, where ``1e-3`` and ``1E5`` (no dot) are *strings* and ``inf`` is
not a number, so ``m: 1e-3`` in a config used to be rejected as "not a float". Configs and
``--set KEY=VALUE`` both read YAML through this loader, which resolves
``[-+]digits[.digits][e[-+]digits]``, ``.5``, and ``inf``/``nan`` (with or without YAML's
leading dot) as floats. Whether a non-finite number is *allowed* is for the field that
takes it to decide (learner parameters never allow one).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?
        |[-+]?\.?(?:inf|Inf|INF)
        |\.?(?:nan|NaN|NAN))$""",
    re.X,
)


class NumberLoader(yaml.SafeLoader):
    """SafeLoader whose implicit float resolver accepts every common float spelling, and
    which refuses a mapping key given twice (PyYAML silently keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key '{key}' (first given on line "
                        f"{seen[key].start_mark.line + 1})", key_node.start_mark)
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node).replace("_", "")
    low = text.lower().lstrip("+")
    if low.lstrip("-.") == "inf":
        return float("-inf") if low.startswith("-") else float("inf")
    if low.lstrip(".") == "nan":
        return float("nan")
    return float(text)


# the int resolver (registered first for digits) keeps plain integers ints
NumberLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
NumberLoader.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT_RE,
                                   list("-+0123456789.iInN"))
NumberLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def load(text: str) -> Any:
    """Parse YAML text with `NumberLoader` (raises `yaml.YAMLError` on bad syntax)."""
    return yaml.load(text, Loader=NumberLoader)  # noqa: S506 - a SafeLoader subclass


def compose(text: str) -> Any:
    """The node tree (for line numbers), with the same resolver as `load`."""
    return yaml.compose(text, Loader=NumberLoader)


def assignments(items: list[str]) -> dict[str, Any]:
    """``["m=0.5", "weighting=null"]`` → ``{"m": 0.5, "weighting": None}``: the ``--set
    KEY=VALUE`` items of the command line, values read as configs read them (``1e-3`` is a
    number); one `ConfigError` naming the item otherwise."""
    from workbench.errors import ConfigError

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key] = load(value) if value.strip() else None
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
            raise ConfigError(f"--set {item!r}: cannot parse value: {first}") from None
    return out
