"""numba for the package's kernels: where their machine code is cached, and what compiling
and loading it costs.

**Cache.** Numba checks only a cached function's own file, so a kernel calling a changed
kernel in another module (the AnDE package, the shared counting layer) would load stale
machine code. Our kernels are therefore cached in
``~/.cache/workbench/numba/<hash of every kernel module>`` (``$XDG_CACHE_HOME`` respected):
any change to any kernel source compiles afresh. This is done by a cache locator that
answers for the package's own files only, so numba's cache directory, the environment
and every other library's kernels in the same process are left as they were. A
``NUMBA_CACHE_DIR`` set by the user applies to our kernels too (numba's own rule).
Kernel modules import numba as ``from workbench.jit import numba``, which installs the
locator before their first cached kernel is defined.

**Compile clock.** `compile_clock()` counts the process CPU and wall seconds spent holding
numba's compiler lock — compiling a kernel specialisation or loading it from the cache,
both first-use costs — so that a fold's timings can leave them out (`CompileTime`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

_PACKAGE = Path(__file__).resolve().parent
_CACHE: dict[str, str] = {}
_CACHE_NUMBA: dict[str, Any] = {}


def kernel_source_hash() -> str:
    """sha256 (16 hex digits) over the package's modules that define numba kernels."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        text = path.read_bytes()
        if b"numba.njit" in text and path.name != "jit.py":  # this file defines none
            h.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + text)
    return h.hexdigest()[:16]


def cache_dir() -> str:
    """The directory of this source version's compiled kernels (created on first use)."""
    if "path" not in _CACHE:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        path = root / "workbench" / "numba" / kernel_source_hash()
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            path = Path(tempfile.gettempdir()) / f"workbench-numba-{os.getuid()}" / path.name
            path.mkdir(parents=True, exist_ok=True)
        _CACHE["path"] = str(path)
    return _CACHE["path"]


def kernel_cache_dir() -> str:
    """Where our kernels are cached in this process: the user's ``NUMBA_CACHE_DIR`` if set,
    else `cache_dir()`."""
    return os.environ.get("NUMBA_CACHE_DIR") or cache_dir()


def _install_locator(numba: Any) -> None:
    """Put a cache locator for the package's own files first in numba's list (once)."""
    from numba.core import caching, config

    classes = caching.CacheImpl._locator_classes
    if any(getattr(c, "_workbench", False) for c in classes):
        return
    package = str(_PACKAGE) + os.sep

    class PackageCacheLocator(caching.UserProvidedCacheLocator):
        """Our kernels' cache in `cache_dir()`; no answer for any other file."""

        _workbench = True

        def __init__(self, py_func: Callable, py_file: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(cache_dir(),
                                            self.get_suitable_cache_subpath(py_file))

        @classmethod
        def from_function(cls, py_func: Callable, py_file: str):
            if config.CACHE_DIR or not os.path.abspath(py_file).startswith(package):
                return None
            return super(caching.UserProvidedCacheLocator, cls).from_function(py_func, py_file)

    classes.insert(0, PackageCacheLocator)
    _install_locked_save(caching)
    _install_quick_load(caching)


def _install_locked_save(caching: Any) -> None:
    """Make saving to our kernel cache safe between processes (once).

    Numba's `IndexDataCacheFile.save` reads the index, picks the first free data-file
    number, writes the index, then the data. Two processes saving different
    specialisations of one function at once (a run's two workers compiling on a cold
    cache; `by_classes` variants share one index) can both pick number 1: the index then
    names one key's file holding the other key's machine code, which later loads silently
    as the wrong kernel (seen: a 6-class model scored with a 2-class-block kernel). Here
    the save holds an exclusive lock on the cache directory, re-reads the index under it,
    and writes the data before the index entry that names it. Saves outside our cache
    directory keep numba's behaviour."""
    cls = caching.IndexDataCacheFile
    if getattr(cls.save, "_workbench", False):
        return
    try:
        import fcntl
    except ImportError:  # (no POSIX locks: numba's own save)
        return
    original = cls.save

    def save(self: Any, key: Any, data: Any) -> None:
        root = os.path.realpath(kernel_cache_dir())
        if not os.path.realpath(self._cache_path).startswith(root):
            return original(self, key, data)
        os.makedirs(self._cache_path, exist_ok=True)
        with open(os.path.join(self._cache_path, ".save.lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            overloads = self._load_index()
            name = overloads.get(key)
            if name is None:
                taken = set(overloads.values())
                number = 1
                while self._data_name(number) in taken:
                    number += 1
                name = self._data_name(number)
            self._save_data(name, data)
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)

    save._workbench = True  # type: ignore[attr-defined]
    cls.save = save


def _install_quick_load(caching: Any) -> None:
    """Load our cached kernels without the work only compiling needs (once).

    Two costs of numba's cache load that a warm process of ours paid for nothing (a 20 × 2
    CV of A1DE on iris: 1.41 → about 1.15 s of CPU, against 0.46 s for importing numpy,
    scipy and numba):

    * before loading any cached function numba refreshes its CPU target, which imports and
      installs every lowering and typing registry (NumPy, linalg, typed containers,
      jitclass …). Compiling refreshes by itself (numba's `CompilerBase`); a cached kernel
      needs only numba's runtime (its allocator's symbols), so that is all a load from our
      cache directory initialises;
    * a cached kernel that uses one of numba's NumPy functions (``np.searchsorted``,
      ``a.sum()``) imports the module defining it, and ``numba.np.arraymath`` probes for
      BLAS when imported: it imports all of ``scipy.linalg`` (about 0.12 s). During our
      loads that probe answers from scipy being installed (it is a dependency); numba's
      own probe is put back at once, so compiling ``np.dot`` later imports and checks BLAS
      as before.

    Loads from anywhere else keep numba's behaviour; where numba's internals differ from
    what this expects, nothing is changed."""
    cls = caching.Cache
    if getattr(cls.load_overload, "_workbench", False):
        return
    if not (hasattr(cls, "_load_overload")
            and hasattr(cls, "_guard_against_spurious_io_errors")):
        return
    try:
        from numba.core.runtime import rtsys
        from numba.np import linalg
    except ImportError:
        return
    original = cls.load_overload
    probe = getattr(linalg, "ensure_blas", None)

    def scipy_present() -> None:
        import importlib.util

        if importlib.util.find_spec("scipy") is None:  # (numba's own error)
            probe()

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        path = getattr(self, "_cache_path", None)
        if path is None or not os.path.realpath(path).startswith(_cache_root()):
            return original(self, sig, target_context)
        rtsys.initialize(target_context)
        deferred = probe is not None and "numba.np.arraymath" not in sys.modules
        if deferred:
            linalg.ensure_blas = scipy_present
        try:
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
            return None  # (the guard swallowed an error: numba compiles instead)
        finally:
            if deferred:
                linalg.ensure_blas = probe
                arraymath = sys.modules.get("numba.np.arraymath")
                if getattr(arraymath, "ensure_blas", None) is scipy_present:
                    arraymath.ensure_blas = probe

    load_overload._workbench = True  # type: ignore[attr-defined]
    cls.load_overload = load_overload


def _cache_root() -> str:
    """`kernel_cache_dir()` resolved (once per directory)."""
    where = kernel_cache_dir()
    if _CACHE.get("root_of") != where:
        _CACHE["root"] = os.path.realpath(where)
        _CACHE["root_of"] = where
    return _CACHE["root"]

ZERO, ONE = np.int64(0), np.int64(1)
"""A kernel's integers 0 and 1 that numba types as int64. A variable that starts at a
literal 0 (``n = 0; … n += 1``) and is handed to another kernel has that kernel compiled
twice at first use: once for ``Literal[int](0)``, the type numba's inference sees first, and once
for int64 (seconds of compiling for a large callee). ``n = ZERO`` compiles it once; the
same holds for a value returned from a variable that starts at a literal."""
TRUE, FALSE = np.bool_(True), np.bool_(False)
"""A kernel's flags that numba types as bool: a callee handed both literal True and False
is compiled twice (once per literal type), with these once."""


class _KernelNumba:
    """numba as our kernels see it: ``njit`` builds no C-callable (``cfunc``) wrapper, which
    only a kernel handed to another as a first-class function value would need (none is) —
    a second function lowered and compiled per kernel, about 5 % of first-use compiling —
    and takes NumPy's error model (a division by zero gives inf or NaN, no test and
    exception per division) unless told otherwise: numba compiles a NumPy or builtin
    function once per caller's options, so kernels of mixed models compiled np.empty,
    np.zeros, max and min again for each (a cold A1DE iris cv compiled np.empty(n,
    int64) five times). Every other name is numba's own."""

    def __init__(self, numba: Any) -> None:
        self._numba = numba

    def __getattr__(self, name: str) -> Any:
        return getattr(self._numba, name)

    def njit(self, *args: Any, **options: Any) -> Any:
        options.setdefault("no_cfunc_wrapper", True)
        options.setdefault("error_model", "numpy")
        return self._numba.njit(*args, **options)


def __getattr__(name: str) -> Any:
    """``from workbench.jit import numba``: numba (`_KernelNumba`), with our cache locator
    installed, and glibc told to keep the kernels' work arrays (`workbench.allocator`)."""
    if name == "numba":
        import numba

        from workbench.allocator import keep_work_arrays

        _install_locator(numba)
        keep_work_arrays()
        if "numba" not in _CACHE_NUMBA:
            _CACHE_NUMBA["numba"] = _KernelNumba(numba)
        return _CACHE_NUMBA["numba"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def by_classes(make: Callable[[int], Any]) -> Callable[[int], Any]:
    """`kernel_for(K)`: the kernel `make(kc)` builds for kc = 2 or 3 (the class count a
    compile-time constant, so class loops unroll) or kc = 0 (any K, read at run time).
    Each variant is built and compiled when a class count first needs it (and cached on
    disk like any kernel), instead of all three inside one kernel at its first call."""
    made: dict[int, Any] = {}

    def kernel_for(K: int) -> Any:
        kc = K if K in (2, 3) else 0
        if kc not in made:
            made[kc] = make(kc)
        return made[kc]

    return kernel_for


# ----- what first use costs ----------------------------------------------------------------
@dataclass(frozen=True)
class CompileTime:
    """Totals of the compile clock at one moment (subtract two for an interval)."""

    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    compiled: int = 0  # kernel specialisations compiled (not found in the cache)

    def __sub__(self, other: "CompileTime") -> "CompileTime":
        return CompileTime(self.cpu_seconds - other.cpu_seconds,
                           self.wall_seconds - other.wall_seconds,
                           self.compiled - other.compiled)


class CompileClock:
    """CPU seconds of the threads holding numba's compiler lock while they hold it (the
    outermost hold of each thread; the thread's own CPU, not the process's: work other
    threads do meanwhile — Arrow decoding a file, a second kernel thread — is not
    compilation), wall seconds in the lock, and how many specialisations were compiled;
    `on_compile` is called with the count at each new compilation (a progress note)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._local = threading.local()
        self._cpu = self._wall = 0.0
        self._compiled = 0
        self.on_compile: Callable[[int], None] | None = None

    def read(self) -> CompileTime:
        with self._guard:
            return CompileTime(self._cpu, self._wall, self._compiled)

    def _lock_start(self) -> None:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0:
            self._local.start = (time.thread_time(), time.perf_counter())

    def _lock_end(self) -> None:
        self._local.depth -= 1
        if self._local.depth == 0:
            cpu0, wall0 = self._local.start
            cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
            with self._guard:
                self._cpu += cpu
                self._wall += wall

    def _compile_start(self) -> None:
        with self._guard:
            self._compiled += 1
            n = self._compiled
        if self.on_compile is not None:
            self.on_compile(n)


_CLOCK: list[CompileClock] = []


def compile_clock() -> CompileClock:
    """The process's compile clock, registered with numba's event API on first call."""
    if not _CLOCK:
        from numba.core import event

        clock = CompileClock()

        class _Lock(event.Listener):
            def on_start(self, ev: Any) -> None:
                clock._lock_start()

            def on_end(self, ev: Any) -> None:
                clock._lock_end()

        class _Compile(event.Listener):
            def on_start(self, ev: Any) -> None:
                clock._compile_start()

            def on_end(self, ev: Any) -> None:
                pass

        event.register("numba:compiler_lock", _Lock())
        event.register("numba:compile", _Compile())
        _CLOCK.append(clock)
    return _CLOCK[0]


def note_compiling(stream: Any = None, interval: float = 10.0) -> None:
    """Have the compile clock say on `stream` (stderr) when kernels are being compiled:
    where they will be cached at the first, then the count at most every `interval` s.
    Once per process: later calls change nothing."""
    clock = compile_clock()
    if clock.on_compile is not None:
        return
    first: list[float] = []
    last = [0.0]

    def say(n: int) -> None:
        now = time.monotonic()
        if first and now - last[0] < interval:
            return
        last[0] = now
        if not first:
            first.append(now)
            text = (f"compiling numba kernels (once per installation; kept in "
                    f"{kernel_cache_dir()}, fold times exclude it)")
        else:
            text = f"compiling numba kernels: {n} so far, {now - first[0]:.0f} s"
        print(f"{text} [process {os.getpid()}]", file=stream or sys.stderr, flush=True)

    clock.on_compile = say


def slp_vectorized(dispatcher: Any) -> Any:
    """`dispatcher` compiled with LLVM's SLP vectoriser on — straight-line operations on
    neighbouring values (a block of classes' factors) packed into vector instructions —
    which numba leaves off by default since some integer code was miscompiled (numba
    #8705). For small floating-point kernels only, each tested against a brute force:
    packing is lane by lane, so the bits are the scalar code's. The switch is numba's
    global setting, read as a kernel's passes are built: it is turned on under numba's
    compiler lock, so no other thread's kernel is compiled meanwhile, and off again
    before the kernel that called for this one goes on compiling."""
    compile_ = dispatcher.compile

    def compile(sig: Any) -> Any:
        from numba.core import config
        from numba.core.compiler_lock import global_compiler_lock

        with global_compiler_lock:
            before, config.SLP_VECTORIZE = config.SLP_VECTORIZE, 1
            try:
                return compile_(sig)
            finally:
                config.SLP_VECTORIZE = before

    dispatcher.compile = compile
    return dispatcher
