"""Where tasks run: in local worker processes (loky), on Dask, or (only for learners that
exist nowhere but in the calling Python session) in this process.

Folds run in worker processes even with one job: a fold can sit for minutes inside a
compiled kernel, which no signal handler interrupts, so the runner stays in Python, waits,
and on Ctrl-C or SIGTERM kills the worker instead of waiting for the kernel to return.
One job on Linux is a worker forked from the runner (`FORK`: nothing imported or loaded
twice); otherwise loky's processes.
Local workers are owned by the run, whatever happens to it:

* they ignore SIGINT, so Ctrl-C reaches only the runner, which keeps every fold already
  finished (also those finished but not yet collected) and then kills the workers — no
  half-run task reports an error, no raw joblib warning is printed;
* each worker watches its parent and exits within a second when the parent is gone, so
  killing the runner with SIGKILL leaves no worker process behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence, TypeVar

from workbench.errors import WorkbenchError

T = TypeVar("T")
BACKENDS = ("loky", "dask")
WATCH_INTERVAL = 0.5  # seconds between a worker's checks that its parent is alive


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCH_INTERVAL)
        if os.getppid() != parent:
            os._exit(1)


def _owned_by(parent: int) -> None:
    """In a worker: ignore Ctrl-C (the runner handles it), die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="workbench-parent-watch").start()


def _worker_init(parent: int) -> None:
    """Run in each loky worker: `_owned_by`, and stay alive when memory grows (loky
    restarts a worker that grew by 300 MB, taking it for a leak: a worker caching a large
    data set or compiling kernels grows that much, and a restart loses its caches and
    prints a warning)."""
    from joblib.externals.loky import process_executor

    process_executor._MAX_MEMORY_LEAK_SIZE = sys.maxsize
    _owned_by(parent)


def iterate(tasks: Sequence[T], fn: Callable[[T], Any], jobs: int, backend: str = "loky",
            scheduler: str | None = None, in_process: bool = False
            ) -> Iterator[tuple[T, Any]]:
    """Yield ``(task, fn(task))`` as tasks finish, in any order.

    Tasks are started in the given order (put the longest first). On KeyboardInterrupt
    the results finished but not yet yielded are handed over in `StoppedEarly.finished`,
    then the workers are killed. `in_process` (one job only) runs the tasks here instead:
    for tasks that cannot be pickled; a signal then waits for the running task's kernel.
    """
    if not tasks:
        return
    if backend not in BACKENDS:
        raise WorkbenchError(
            f"--backend: unknown backend {backend!r} (choose {', '.join(BACKENDS)})")
    if in_process:
        if backend != "loky" or jobs != 1:
            raise WorkbenchError("in-process runs take one job and no Dask backend")
        for t in tasks:
            yield t, fn(t)
        return
    if backend == "loky" and jobs == 1 and FORK:
        yield from _iterate_forked(tasks, fn)
    elif backend == "loky":
        yield from _iterate_local(tasks, fn, jobs)
    else:
        yield from _iterate_dask(tasks, fn, jobs, scheduler)


class StoppedEarly(KeyboardInterrupt):
    """Raised from `iterate` when interrupted; `finished` holds the (task, result) pairs
    that had completed but were not yet yielded (the caller stores them); `exit_code` is
    the interrupting signal's (130 Ctrl-C, 143 SIGTERM)."""

    def __init__(self, finished: list[tuple[Any, Any]], cause: BaseException) -> None:
        super().__init__(str(cause))
        self.finished = finished
        self.exit_code = getattr(cause, "exit_code", 130)


def _iterate_local(tasks: Sequence[T], fn: Callable[[T], Any], jobs: int
                   ) -> Iterator[tuple[T, Any]]:
    # the resource tracker that outlives a killed run would warn about the dead run's
    # semaphores; that is expected, not news to the user
    quiet = "ignore::UserWarning:joblib.externals.loky.backend.resource_tracker"
    current = os.environ.get("PYTHONWARNINGS", "")
    if quiet not in current:
        os.environ["PYTHONWARNINGS"] = f"{current},{quiet}" if current else quiet
    from joblib.externals.loky import ProcessPoolExecutor  # 0.1 s of CPU: only for workers

    # a pool of the run's own (not loky's process-wide reusable one, which joblib shares)
    executor = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init,
                                   initargs=(os.getpid(),))
    # keep at most 2 tasks a worker queued, so the start order is the given order and an
    # interrupt has little to cancel
    pending: dict[Future, T] = {}
    it = iter(tasks)
    try:
        for t in it:
            pending[executor.submit(fn, t)] = t
            if len(pending) >= 2 * jobs:
                break
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for f in done:
                t = pending.pop(f)
                yield t, f.result()
                nxt = next(it, None)
                if nxt is not None:
                    pending[executor.submit(fn, nxt)] = nxt
        executor.shutdown(wait=True)
    except BaseException as exc:
        finished = [(pending[f], f.result()) for f in list(pending)
                    if f.done() and not f.cancelled() and f.exception() is None]
        # no f.cancel() here: loky's shutdown fails every queued future itself, and
        # one we cancelled first makes its manager thread die on InvalidStateError
        _kill_pool(executor)
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, StoppedEarly):
            raise StoppedEarly(finished, exc) from None
        raise


KILL_WAIT = 10.0
"""Seconds a stopping run waits for loky to shut its pool down before it kills the worker
processes itself (a worker that the Ctrl-C met while it was starting can leave loky's
shutdown waiting for it)."""


def _kill_pool(executor: Any) -> None:
    """Shut the pool down killing its workers, within `KILL_WAIT` seconds whatever loky
    does: stop means stop."""
    closer = threading.Thread(target=executor.shutdown,
                              kwargs={"wait": True, "kill_workers": True}, daemon=True)
    closer.start()
    closer.join(KILL_WAIT)
    # whatever loky did (its manager thread can die before killing anyone), no worker
    # outlives the pool: one left running would hold the run's exit
    for proc in list((getattr(executor, "_processes", None) or {}).values()):
        try:
            os.kill(proc.pid, signal.SIGKILL)  # loky's processes have no kill()
            proc.join(2.0)
        except (OSError, AttributeError, ValueError, AssertionError, TypeError):
            pass
    closer.join(2.0)


FORK = sys.platform.startswith("linux")
"""One worker is forked from the runner where fork is safe and cheap (Linux): it starts
with the runner's imports and loaded kernels, so a run costs what it did in one process
(a loky worker imports and loads everything again: +1.2 s of CPU on a 20 × 2 CV of iris)."""


def _fork_loop(fn: Callable[[Any], Any], conn: Any, parent: int) -> None:
    """The forked worker: run the tasks the runner sends, in order, until it sends None."""
    _owned_by(parent)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the runner's Python handler
    while (task := conn.recv()) is not None:
        try:
            conn.send((True, fn(task)))
        except Exception as exc:  # noqa: BLE001 - reported by the runner
            conn.send((False, f"{type(exc).__name__}: {exc}"))


def _iterate_forked(tasks: Sequence[T], fn: Callable[[T], Any]) -> Iterator[tuple[T, Any]]:
    """`iterate` on one forked worker (`FORK`): tasks go down a pipe, at most two queued,
    results come back in order; on interrupt the worker is killed."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_fork_loop, args=(fn, there, os.getpid()), daemon=True,
                       name="workbench-worker")
    proc.start()
    there.close()
    queued: list[T] = []
    it = iter(tasks)
    try:
        for t in it:
            here.send(t)
            queued.append(t)
            if len(queued) == 2:
                break
        while queued:
            try:
                ok, value = here.recv()
            except (EOFError, OSError):  # killed (out of memory?): as a broken loky pool
                raise BrokenProcessPool(f"exit code {proc.exitcode}") from None
            t = queued.pop(0)
            if not ok:
                raise WorkbenchError(f"the worker process failed: {value}")
            yield t, value
            nxt = next(it, None)
            if nxt is not None:
                here.send(nxt)
                queued.append(nxt)
        here.send(None)
        proc.join()
    except BaseException as exc:
        finished = []
        try:  # results already sent back but not yet read are kept too
            while queued and here.poll(0):
                ok, value = here.recv()
                t = queued.pop(0)
                if ok:
                    finished.append((t, value))
        except Exception:  # noqa: BLE001 - a message cut by the interrupt: recomputed later
            pass
        proc.kill()
        proc.join()
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, StoppedEarly):
            raise StoppedEarly(finished, exc) from None
        raise
    finally:
        here.close()
        if proc.is_alive():
            proc.kill()
            proc.join()


SCHEDULER_FILE = "file:"
"""Prefix of a `scheduler` string naming a Dask scheduler file (``--scheduler-file``)."""


def _check_visible(client: Any, tasks: Sequence[Any]) -> None:
    """Every data file the tasks read (their absolute ``path``) must exist on every worker
    of a remote cluster (a shared filesystem), and the run directory out-of-core rounds
    stream their predictions into (``run_dir``) too: refuse before anything is computed."""
    paths = sorted({str(getattr(t, "path", "")) for t in tasks} - {""})
    dirs = sorted({str(getattr(t, "run_dir", "")) for t in tasks
                   if getattr(t, "out_of_core", None) is not None} - {""})
    if not paths and not dirs:
        return
    seen = client.run(lambda ps, ds: ([p for p in ps if not os.path.isfile(p)],
                                      [d for d in ds if not os.path.isdir(d)]), paths, dirs)
    if not seen:
        raise WorkbenchError("the Dask scheduler has no workers")
    for worker, (missing, no_dir) in sorted(seen.items()):
        if missing:
            raise WorkbenchError(
                f"data file {missing[0]} is not visible on Dask worker {worker} "
                f"({len(missing)} of {len(paths)} files missing there): run workers on "
                "hosts that share the data directory at the same absolute path")
        if no_dir:
            raise WorkbenchError(
                f"run directory {no_dir[0]} is not visible on Dask worker {worker}: "
                "out-of-core rounds stream their predictions into it from the workers; "
                "put the run's output on the shared filesystem (--output)")


class ClusterLost(WorkbenchError):
    """The Dask cluster stopped answering mid-run (scheduler gone, workers killed)."""

    def __init__(self, where: str, exc: BaseException) -> None:
        text = str(exc).strip().splitlines()
        super().__init__(f"the Dask scheduler {where} was lost ({type(exc).__name__}"
                         + (f": {text[0]}" if text else "") + ")")


class WorkersLost(ClusterLost):
    """Every worker of the local cluster stopped and none could be restarted."""

    def __init__(self, n_workers: int) -> None:
        WorkbenchError.__init__(
            self, f"each of the local Dask cluster's {n_workers} worker(s) stopped and "
            "none could be restarted (out of memory, or no process could be started)")


class _TaskLost(Exception):
    """A task's future failed though the task never raises: the cluster is gone."""


WATCH_SECONDS = 2.0
"""How often a local cluster's session checks that a worker process is left."""
ALLOWED_FAILURES = 2
"""Times a task may be running on a worker that dies (out of memory, killed) before it
fails: the local cluster's ``distributed.scheduler.allowed-failures`` (a remote
scheduler's is its own configuration: `docs/cluster.md`)."""
WORKER_LOG_VARIABLE = "DASK_LOGGING__DISTRIBUTED"
"""Dask's variable for the `logging: distributed` level, read by a worker process when it
imports distributed (the local cluster's workers log at CRITICAL only)."""


def killed_message(exc: BaseException) -> str | None:
    """The one line for Dask's KilledWorker (None for any other exception)."""
    if type(exc).__name__ != "KilledWorker":
        return None
    return ("a Dask task was running on each of the workers that died while it ran "
            f"(allowed failures: {ALLOWED_FAILURES} on a local cluster): out of memory? "
            "Give the workers more memory (docs/cluster.md) or the data smaller chunks")


def _lost(exc: BaseException) -> bool:
    """Whether `exc` says the connection to the scheduler is gone."""
    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e}
    return bool(names & {"CommClosedError", "CancelledError", "FutureCancelledError",
                         "TimeoutError", "StreamClosedError", "OSError",
                         "ConnectionRefusedError"})


@contextlib.contextmanager
def dask_session(n_workers: int, scheduler: str | None) -> Iterator[Any]:
    """A Dask client on `scheduler` (an address, or `SCHEDULER_FILE` + a path) or on a
    local cluster of `n_workers` processes with one thread each. A task whose worker dies
    is retried, then fails (`ALLOWED_FAILURES`, `killed_message`); a lost scheduler is one
    `ClusterLost` line (the client's own reconnection log, tracebacks at ERROR, is
    silenced: it would bury the line)."""
    try:  # imported first: importing distributed sets its loggers' levels
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - dask is an optional dependency
        raise WorkbenchError(f"Dask needs dask[distributed]: {exc}") from None
    client_log = logging.getLogger("distributed.client")
    log_variable = os.environ.get(WORKER_LOG_VARIABLE)
    cluster = None
    settings = contextlib.ExitStack()
    stop = threading.Event()
    where = "of the local cluster"
    if scheduler:
        path = scheduler[len(SCHEDULER_FILE):] if scheduler.startswith(SCHEDULER_FILE) \
            else None
        flag = "--scheduler-file" if path is not None else "--scheduler"
        where = f"({flag} {path or scheduler})"
        try:
            client = (Client(scheduler_file=path, timeout=30) if path is not None
                      else Client(scheduler, timeout=30))
        except Exception as exc:
            raise WorkbenchError(f"{flag} {path or scheduler}: cannot connect: {exc}") \
                from None
    else:
        # worker-saturation 1.0: a worker holds only the task it runs (Dask's default 1.1
        # queues one more there, and a worker that dies counts it as suspect too, so a
        # healthy fold could fail beside one that kills its worker). The worker processes
        # log at CRITICAL only: their logging is set up on import, before the nanny hands
        # them any config, so it goes through the environment they are spawned with (a
        # worker that loses the scheduler while the cluster closes logs a traceback at
        # ERROR; a task's own error reaches the run as its exception anyway)
        # lost-worker-timeout: Dask closes a worker's nanny for good if no worker of its
        # name is registered 15 s after one was removed — a nanny restarting a worker that
        # dies again (retries of a fold that kills it, on a loaded machine) can be caught
        # between two lives, and with every nanny closed the run waited forever; a nanny
        # restarts its own worker, so it is never closed from outside during the session
        # (it is read when a worker is removed: the settings hold for the whole session)
        settings.enter_context(dask.config.set({
            "distributed.deploy.lost-worker-timeout": "3650 days",
            "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
            "distributed.scheduler.worker-saturation": 1.0,
            "distributed.nanny.pre-spawn-environ": {WORKER_LOG_VARIABLE: "critical"}}))
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.CRITICAL)
        client = Client(cluster)
        threading.Thread(target=_watch_workers, args=(cluster, client, stop), daemon=True,
                         name="workbench-dask-watch").start()
    # (the local scheduler's and nannies' logs of a dying worker — a dozen lines each —
    # are said in one line by the run: `killed_message`)
    quiet = [client_log] + ([] if scheduler else [logging.getLogger(f"distributed.{n}")
                                                  for n in ("scheduler", "nanny")])
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.CRITICAL)
    try:
        yield client
    except WorkbenchError:
        raise
    except Exception as exc:
        if killed_message(exc):
            raise WorkbenchError(killed_message(exc)) from None
        if cluster is not None and stop.is_set():  # the watch cancelled the futures
            raise WorkersLost(n_workers) from None
        if isinstance(exc, _TaskLost) or _lost(exc):
            raise ClusterLost(where, exc.__cause__ if isinstance(exc, _TaskLost) else exc) \
                from None
        raise
    finally:
        stop.set()
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        except Exception:  # noqa: BLE001 - a lost cluster cannot be closed cleanly
            pass
        settings.close()
        for q, lv in zip(quiet, levels):
            q.setLevel(lv)
        if cluster is not None:  # the nannies set it in this process's environment
            if log_variable is None:
                os.environ.pop(WORKER_LOG_VARIABLE, None)
            else:
                os.environ[WORKER_LOG_VARIABLE] = log_variable


def _watch_workers(cluster: Any, client: Any, stop: threading.Event) -> None:
    """Until `stop`: when no nanny of the local `cluster` is left running (each closed,
    none restarting its worker), set `stop` and cancel the client's futures, so whatever
    waits on one raises (`WorkersLost`) instead of waiting forever."""
    while not stop.wait(WATCH_SECONDS):
        nannies = list(cluster.workers.values())
        if any(getattr(n.status, "name", "") not in ("closing", "closed", "failed")
               for n in nannies):
            continue
        stop.set()
        with contextlib.suppress(Exception):  # the client may be closing meanwhile
            from distributed import Future as DaskFuture

            client.cancel([DaskFuture(k, client) for k in list(client.futures)],
                          reason="every worker of the local cluster stopped")
        return


def _iterate_dask(tasks: Sequence[T], fn: Callable[[T], Any], jobs: int,
                  scheduler: str | None) -> Iterator[tuple[T, Any]]:
    """`iterate` on Dask: every task submitted at once (priorities keep the given order);
    a task that killed its workers (`ALLOWED_FAILURES`) is that task's error; anything
    else failing is the cluster lost."""
    with dask_session(jobs, scheduler) as client:
        if scheduler:
            _check_visible(client, tasks)
        from dask.distributed import as_completed

        futures = {}
        for i, t in enumerate(tasks):
            futures[client.submit(fn, t, pure=False, priority=len(tasks) - i)] = t
        dead: set[tuple] = set()  # the pairs one of whose tasks killed its workers
        for f in as_completed(list(futures)):
            t = futures[f]
            if f.cancelled() and _pair(t) in dead:
                yield t, {"error": killed_message(KilledWorker())}
                continue
            try:
                value = f.result()
                del futures[f]  # released: its worker's death no longer recomputes it
            except Exception as exc:  # the task itself never raises (run_task reports)
                if not killed_message(exc):
                    raise _TaskLost() from exc
                value = {"error": killed_message(exc)}
                dead.add(_pair(t))  # its other tasks would kill workers too: not run
                client.cancel([g for g, u in futures.items()
                               if _pair(u) == _pair(t) and not g.done()])
            yield t, value


class KilledWorker(Exception):
    """Stands for Dask's exception of that name (a pair's cancelled tasks)."""


def _pair(task: Any) -> tuple:
    return (getattr(task, "dataset", None), getattr(task, "learner", None))


def on_dask_worker() -> bool:
    """Whether this code runs inside a Dask worker's task."""
    try:
        from distributed import get_worker

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


@contextlib.contextmanager
def worker_client() -> Iterator[Any]:
    """In a Dask task: a client of the same cluster for sub-tasks, the task's thread
    seceded meanwhile (so its worker runs them too); None outside Dask."""
    if not on_dask_worker():
        yield None
        return
    from distributed import worker_client as dask_worker_client

    with dask_worker_client() as client:
        yield client
