"""The house rules, read from the source (no import of the package's modules needed):

* modules follow the data flow — data → discretize → learners → evaluation → stats / store
  → report → experiment → the front doors — and no module imports one on a higher floor
  (deferred imports inside functions included), nor is there an import circle between
  the packages;
* no function is longer than `MAX_LINES`;
* no compiled kernel takes more than `MAX_KERNEL_PARAMETERS` parameters (arrays travel in
  named tuples: one transposed positional argument would be silent);
* no private name (``_x``) is imported from another module, beyond `PRIVATE_ALLOWED`.

There is no exemption list for the size rules: a function that needs more lines is split
into named steps, a kernel that needs more inputs takes them as named tuples.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "workbench"
MAX_LINES = 120
MAX_KERNEL_PARAMETERS = 16

FLOORS: dict[str, int] = {
    # the ground: shared services every stage may use
    "errors": 0, "log": 0, "yamlnum": 0, "fileio": 0, "resources": 0, "jit": 0,
    "allocator": 0,
    "rowops": 0, "ranking": 0,
    # the data flow
    "data": 1, "discretize": 2, "learners": 3, "plugins": 3, "evaluation": 4,
    "stats": 5, "store": 5, "report": 6, "experiment": 7,
    # the front doors
    "sklearn": 8, "testing": 8, "cli": 9, "__main__": 9, "__init__": 9,
}
"""Each top-level module or package of `workbench` and its floor: an import may go to the
same floor or down, never up."""

PRIVATE_ALLOWED: set[tuple[str, str]] = set()
"""(importing module, imported private name) pairs allowed across modules — at most five,
each with a comment saying why. None today."""

def _modules(package: Path = PACKAGE) -> dict[str, ast.Module]:
    """Dotted module name → its syntax tree, for every module of the package."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return out


def _room(module: str) -> str:
    """The top-level module or package of `workbench` a dotted name belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(name: str, tree: ast.Module, known: set[str]):
    """(imported module, imported name or None, line) for every import of a workbench
    module in `tree`, at any depth; ``from workbench import x`` is module workbench.x
    when that is a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("workbench"):
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                pkg = name.split(".")
                pkg = pkg[: len(pkg) - node.level + (1 if name in _packages(known) else 0)]
                base = ".".join(pkg + ([base] if base else []))
            if not base.startswith("workbench"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub, None, node.lineno) if sub in known else \
                    (base, alias.name, node.lineno)


def _private_attributes(name: str, tree: ast.Module, known: set[str]):
    """(module, private name, line) for each ``module._x`` read in `tree`, where `module`
    is a name the file bound to another workbench module by an import."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("workbench") and alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workbench"):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in known:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in bound and bound[node.value.id] != name \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            yield bound[node.value.id], node.attr, node.lineno


def _packages(known: set[str]) -> set[str]:
    return {m for m in known if any(k.startswith(m + ".") for k in known)}


def _defs(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _is_kernel(node: ast.FunctionDef) -> bool:
    return any("njit" in ast.unparse(d) or "numba.jit" in ast.unparse(d)
               for d in node.decorator_list)


def _where(module: str, function: str) -> str:
    path = module.split(".")[1:]
    return "/".join(path) + ".py:" + function if path else function


def house_problems(package: Path = PACKAGE,
                   allowed: set[tuple[str, str]] | None = None) -> list[str]:
    """Every broken house rule of `package`, one line each."""
    allowed = PRIVATE_ALLOWED if allowed is None else allowed
    modules = _modules(package)
    known = set(modules)
    problems = []
    arrows: dict[str, set[str]] = defaultdict(set)
    for name, tree in modules.items():
        here = _room(name)
        for target, member, line in _imports(name, tree, known):
            there = _room(target)
            if target == "workbench" and member and member.startswith("__"):
                continue  # the package's own metadata (``__version__``)
            if there != here:
                arrows[here].add(there)
                if FLOORS.get(there, 99) > FLOORS.get(here, -1):
                    problems.append(f"{name}:{line} imports {target} (floor "
                                    f"{FLOORS.get(there)}) from floor {FLOORS.get(here)}")
            if member and member.startswith("_") and not member.startswith("__") \
                    and target != name and (name, member) not in allowed:
                problems.append(f"{name}:{line} imports the private {target}.{member}")
        for target, member, line in _private_attributes(name, tree, known):
            if (name, member) not in allowed:
                problems.append(f"{name}:{line} uses the private {target}.{member}")
        for node in _defs(tree):
            key = _where(name, node.name)
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES:
                problems.append(f"{key} has {lines} lines (at most {MAX_LINES})")
            if _is_kernel(node) and len(node.args.args) > MAX_KERNEL_PARAMETERS:
                problems.append(f"{key} is a kernel of {len(node.args.args)} parameters (at "
                                f"most {MAX_KERNEL_PARAMETERS})")
    problems += [f"import circle: {' -> '.join(c)}" for c in _circles(arrows)]
    if len(allowed) > 5:
        problems.append(f"PRIVATE_ALLOWED has {len(allowed)} entries (at most 5)")
    return problems


def _circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The import circles between rooms (each once, from its smallest member)."""
    out = []
    for start in sorted(arrows):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(arrows.get(node, ())):
                if nxt == start:
                    out.append(path + [start])
                elif nxt not in path and nxt > start:
                    stack.append((nxt, path + [nxt]))
    return out


# ----- the tests --------------------------------------------------------------------------
def test_the_house_keeps_its_rules():
    assert house_problems() == []


def _toy(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "workbench"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_each_rule_fails_when_broken(tmp_path):
    long_body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))  # + def line: 121
    kernel_args = ", ".join(f"a{i}" for i in range(MAX_KERNEL_PARAMETERS + 1))
    root = _toy(tmp_path, {
        "__init__.py": "",
        "data/__init__.py": "from workbench.learners.model import fit\n",  # upward
        "learners/__init__.py": "",
        "learners/model.py": ("from workbench.learners.tables import _helper\n"  # private
                              f"def fit():\n{long_body}\n"
                              f"@numba.njit\ndef k({kernel_args}):\n    pass\n"),
        "learners/tables.py": "def _helper():\n    pass\n",
        "learners/other.py": ("from workbench.learners import tables\n"
                              "def g():\n    return tables._helper()\n"),
        "evaluation/__init__.py": "import workbench.stats\n",
        "stats/__init__.py": "def f():\n    import workbench.evaluation\n",  # a circle
    })
    problems = "\n".join(house_problems(root, allowed=set()))
    assert "workbench.data:1 imports workbench.learners.model (floor 3) from floor 1" \
        in problems
    assert "imports the private workbench.learners.tables._helper" in problems
    assert "workbench.learners.other:3 uses the private workbench.learners.tables._helper" \
        in problems
    assert "learners/model.py:fit has 121 lines (at most 120)" in problems
    assert "learners/model.py:k is a kernel of 17 parameters (at most 16)" in problems
    assert "import circle: evaluation -> stats -> evaluation" in problems
    # a 120-line function and a 16-parameter kernel keep the rules; an allowed private name
    ok = _toy(tmp_path / "ok", {
        "__init__.py": "",
        "learners/__init__.py": "",
        "learners/model.py": ("from workbench.learners.tables import _helper\n"
                              "def fit():\n" + "\n".join(long_body.splitlines()[1:]) + "\n"
                              "@numba.njit\ndef k(" + kernel_args.rsplit(",", 1)[0] +
                              "):\n    pass\n"),
        "learners/tables.py": "def _helper():\n    pass\n",
    })
    assert house_problems(ok, allowed={("workbench.learners.model", "_helper")}) == []
    # the allow-list entry taken away
    assert "private" in " ".join(house_problems(ok, allowed=set()))
