"""User plugins: modules or `.py` files that register learners before a run.

A config lists ``plugins: [my_module, path/to/file.py]``. Each entry is imported once per
process (the runner's worker processes load them too), and registers learners through
`workbench.register`. Installed packages register through the ``workbench.learners``
entry-point group instead (`registry.load_entry_points`, with the built-in learners).

A plugin that fails to import, or registers a name that already exists, raises one
`PluginError` naming the plugin (and both sources of a clashing name); whatever that plugin
had registered before failing is removed again, so the registry is left as it was.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Iterable

from workbench.errors import WorkbenchError
from workbench.learners import registry

_loaded: dict[str, str] = {}  # plugin key (module name or resolved path) -> module name


class PluginError(WorkbenchError):
    """A plugin could not be imported or registered a clashing learner name."""


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _module_name_for(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return f"workbench_plugin_{path.stem}_{digest}"


def load_plugin(spec: str, base_dir: Path | None = None) -> str:
    """Import one plugin (module name or `.py` path relative to `base_dir`); return its key.

    Loading the same plugin again in the same process is a no-op.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError(f"plugin entry must be a module name or a .py path, got {spec!r}")
    if _is_path(spec):
        path = Path(spec).expanduser()
        if not path.is_absolute():
            path = (base_dir or Path.cwd()) / path
        path = path.resolve()
        key = str(path)
        if key in _loaded:
            return key
        if not path.is_file():
            raise PluginError(f"plugin '{spec}': file not found ({path})")
        module_name = _module_name_for(path)
        importer = lambda: _import_file(module_name, path)  # noqa: E731
    else:
        key = module_name = spec
        if key in _loaded:
            return key
        importer = lambda: importlib.import_module(spec)  # noqa: E731

    registry.load_builtins()
    before = set(registry.names())
    try:
        importer()
    except WorkbenchError as exc:
        _rollback(before, module_name)
        raise PluginError(f"plugin '{spec}': {exc}") from None
    except Exception as exc:  # any import-time failure of user code
        _rollback(before, module_name)
        where = _failure_location(exc)
        raise PluginError(
            f"plugin '{spec}' failed to import{where}: {type(exc).__name__}: {exc}"
        ) from None
    _loaded[key] = module_name
    return key


def load_plugins(specs: Iterable[str], base_dir: Path | None = None) -> list[str]:
    """Load every plugin in order; the first failure raises `PluginError`."""
    return [load_plugin(s, base_dir) for s in specs]


def _import_file(module_name: str, path: Path) -> None:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)


def _rollback(before: set[str], module_name: str) -> None:
    for name in set(registry.names()) - before:
        registry.unregister(name)
    sys.modules.pop(module_name, None)


def _failure_location(exc: Exception) -> str:
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" ({exc.filename}, line {exc.lineno})"
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is not None:
        return f" ({last.tb_frame.f_code.co_filename}, line {last.tb_lineno})"
    return ""
