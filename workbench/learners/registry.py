"""Learner registry: display names → (factory, default parameters, where it came from).

A registered *variant* is a parameter set of a base learner, e.g.
``register("A2DE-SW", AnDE, n=2, subsumption=100, weighting="mi")``. Configs add variants
with no code by naming a registered learner plus overrides (see `create`).

Built-in learners are registered when their modules are first imported (lazily, on the
first lookup): every module and subpackage of `workbench.learners` is imported
(`import_package`), so a new learner module registers itself by being there — no list to
keep. Plugins register through the same `register` function.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import sys
import types
import typing
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable

from workbench.discretize import check_method
from workbench.errors import LearnerError
from workbench.learners.base import declared_parameters

BUILTIN_PACKAGE = "workbench.learners"

PREPROCESSING_KEY = "preprocessing"


@dataclass(frozen=True)
class LearnerSpec:
    """One registered name: factory + defaults + provenance."""

    name: str
    factory: Callable[..., Any]
    defaults: dict[str, Any] = field(default_factory=dict)
    source: str = "builtin"
    description: str = ""

    @property
    def output_version(self) -> int:
        """The factory's `Learner.output_version` (1 for a factory that declares none)."""
        return int(getattr(self.factory, "output_version", 1))

    def parameters(self) -> dict[str, Any]:
        """All constructor parameters with their effective defaults for this name."""
        declared = declared_parameters(self.factory)
        if declared is not None:
            return {n: self.defaults.get(n, p.default) for n, p in declared.items()}
        out = {}
        for p in _signature_params(self.factory).values():
            out[p.name] = self.defaults.get(
                p.name, None if p.default is inspect.Parameter.empty else p.default
            )
        return out


_REGISTRY: dict[str, LearnerSpec] = {}
_builtins_loaded = False


def _check_value(learner: str, factory: Callable[..., Any], key: str, value: Any,
                 unknown: str) -> None:
    """One parameter value against the factory's declaration or signature."""
    declared = declared_parameters(factory)
    if declared is not None:
        if key not in declared:
            raise LearnerError(unknown.format(params=", ".join(declared) or "none"))
        declared[key].check(f"learner '{learner}'", value)
        return
    params = _signature_params(factory)
    if key not in params:
        raise LearnerError(unknown.format(params=", ".join(params) or "none"))
    _check_type(learner, key, value, params[key])


def _signature_params(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """Constructor parameters, with string (postponed) annotations resolved."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # unresolvable annotation: fall back to default-value types
        hints = {}
    params = inspect.signature(target).parameters
    return {
        name: p.replace(annotation=hints.get(name, inspect.Parameter.empty))
        for name, p in params.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


def _describe_source(factory: Callable[..., Any]) -> str:
    module = getattr(factory, "__module__", None) or "?"
    if module.startswith("workbench."):
        return "builtin"
    try:
        path = inspect.getsourcefile(factory)
    except TypeError:
        path = None
    if path and module.startswith("workbench_plugin_"):
        return path  # a plugin loaded from a file: the file says it all
    return f"{module} ({path})" if path else module


def register(
    name: str,
    factory: Callable[..., Any] | None = None,
    *,
    source: str | None = None,
    description: str = "",
    **defaults: Any,
):
    """Register `factory` (a Learner class or callable) under `name` with default parameters.

    Usable directly, ``register("A1DE", AnDE, n=1)``, or as a decorator,
    ``@register("MyNB")``. Registering a name twice is an error naming both sources.
    """

    def _do(f: Callable[..., Any]) -> Callable[..., Any]:
        if not isinstance(name, str) or not name:
            raise LearnerError(f"learner name must be a non-empty string, got {name!r}")
        src = source or _describe_source(f)
        if name in _REGISTRY:
            prev = _REGISTRY[name]
            raise LearnerError(
                f"learner '{name}' is registered twice: by {prev.source} and by {src}"
            )
        for key, value in defaults.items():
            if key == PREPROCESSING_KEY:
                continue
            _check_value(name, f, key, value,
                         f"register('{name}'): {key!r} is not a parameter of "
                         f"{getattr(f, '__name__', f)} (has: {{params}})")
        doc = description or (inspect.getdoc(f) or "").split("\n")[0]
        _REGISTRY[name] = LearnerSpec(name, f, dict(defaults), src, doc)
        return f

    if factory is None:
        return _do
    _do(factory)
    return factory


def unregister(name: str) -> None:
    """Remove a name (used by tests and by plugin loading rollback)."""
    _REGISTRY.pop(name, None)


def import_package(package: str) -> list[str]:
    """Import every module and subpackage directly in `package` (a package scan, names
    starting with ``_`` left out), in name order; returns their names."""
    path = importlib.import_module(package).__path__
    names = [f"{package}.{m.name}" for m in sorted(pkgutil.iter_modules(path),
                                                   key=lambda m: m.name)
             if not m.name.startswith("_")]
    for name in names:
        importlib.import_module(name)
    return names


def load_builtins() -> None:
    """Import the built-in learner modules once (`BUILTIN_PACKAGE` scanned: they register
    themselves), then the learners of installed packages (``workbench.learners`` entry
    points)."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    import_package(BUILTIN_PACKAGE)
    load_entry_points()


ENTRY_POINT_GROUP = "workbench.learners"
_entry_points_loaded: set[str] = set()


def load_entry_points() -> list[str]:
    """Load installed packages' ``workbench.learners`` entry points (once each).

    An entry point may name a module (importing it registers its learners) or a callable
    taking no arguments (called once). One that fails is rolled back (its names
    unregistered) and reported as a `LearnerError` naming it.
    """
    loaded = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = f"entry point {ep.name} = {ep.value}"
        if key in _entry_points_loaded:
            continue
        before = set(_REGISTRY)
        try:
            obj = ep.load()
            if callable(obj):
                obj()
        except Exception as exc:
            for name in set(_REGISTRY) - before:
                unregister(name)
            sys.modules.pop(ep.module, None)
            raise LearnerError(f"{key} failed to load: {type(exc).__name__}: {exc}") from None
        _entry_points_loaded.add(key)
        loaded.append(key)
    return loaded


def names() -> list[str]:
    """Registered names in registration order."""
    load_builtins()
    return list(_REGISTRY)


def get(name: str) -> LearnerSpec:
    """The spec registered under `name`; unknown names give a clear error."""
    load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY)
        raise LearnerError(f"unknown learner '{name}' (known: {known})") from None


def create(name: str, **overrides: Any):
    """Instantiate the learner registered as `name`, with parameter overrides validated.

    The special key ``preprocessing`` (e.g. ``"ef:5"``) overrides the learner's declared
    input instead of being passed to the constructor.
    """
    spec = get(name)
    preprocessing = overrides.pop(PREPROCESSING_KEY, spec.defaults.get(PREPROCESSING_KEY))
    for key, value in overrides.items():
        _check_value(name, spec.factory, key, value,
                     f"learner '{name}': unknown parameter '{key}' (parameters: {{params}})")
    kwargs = {k: v for k, v in spec.defaults.items() if k != PREPROCESSING_KEY}
    kwargs.update(overrides)
    learner = spec.factory(**kwargs)
    if preprocessing is not None:
        check_method(preprocessing, where=f"learner '{name}': parameter 'preprocessing'")
        learner.preprocessing = preprocessing
    return learner


# ----- parameter type checking ----------------------------------------------------------
def _check_type(learner: str, key: str, value: Any, param: inspect.Parameter) -> None:
    """Raise a LearnerError if `value` does not fit the parameter's annotation/default."""
    ann = param.annotation
    if ann is inspect.Parameter.empty:
        if param.default is inspect.Parameter.empty or param.default is None:
            return
        ann = type(param.default)
    if not _fits(value, ann):
        raise LearnerError(
            f"learner '{learner}': parameter '{key}' must be {_type_name(ann)}, "
            f"got {value!r} ({type(value).__name__})"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise LearnerError(
            f"learner '{learner}': parameter '{key}' must be a finite number, got {value!r}")


def _fits(value: Any, ann: Any) -> bool:
    origin = typing.get_origin(ann)
    if ann is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in typing.get_args(ann))
    if origin is typing.Literal:
        return value in typing.get_args(ann)
    if ann is None or ann is type(None):
        return value is None
    if ann is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if ann is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(ann, type):
        return isinstance(value, ann)
    return True


def _type_name(ann: Any) -> str:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(ann))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(ann))
    if ann is None or ann is type(None):
        return "null"
    return getattr(ann, "__name__", str(ann))
