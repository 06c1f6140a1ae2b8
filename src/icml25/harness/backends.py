"""Run many reproductions: in this process, in worker processes (``--jobs N``) or on Ray.

:func:`run_many` plans every paper in the driver, runs the jobs on a backend and commits each
result into the store in the driver, as soon as it arrives (``harness.runner``).  Faults:

- a reproduction that raises: that paper is ``failed`` with the traceback, the others go on;
- a paper running longer than ``timeout`` seconds: its worker is killed (a local worker with its whole
  process group, so pools and servers the reproduction started go too), the paper is ``failed``
  with ``timed out after N s`` (worker backends only: ``--jobs 1`` with a timeout uses one worker);
- a worker process that dies (``SIGKILL``, segfault, out of memory): with local workers the paper is
  ``failed`` with the signal, the others go on; on Ray the task is retried ``max_retries`` times;
- Ctrl-C (``KeyboardInterrupt``): the workers are stopped and the interrupt propagates; results
  finished before it are stored, nothing partial is written;
- a write error (full disk, unwritable folder): :class:`~icml25.harness.store.StoreError` stops
  the run, after the workers are stopped; what was stored before stays intact.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from icml25.harness.registry import Entry
from icml25.harness.runner import Job, Outcome, Payload, commit, execute, plan, run_job
from icml25.harness.store import check_writable
from icml25.harness.store import warn as default_warn
from icml25.utils.validation import check_choice, check_scalar

BACKENDS = ("local", "ray")
RAY_HINT = "the ray backend needs Ray: pip install -e '.[ray]' (from the checkout)"


class BackendUnavailableError(RuntimeError):
    """The chosen backend cannot run here (Ray not installed, no cluster at the address)."""


@dataclass
class Hooks:
    """Callbacks a front end (the CLI's progress bars) gets while :func:`run_many` works."""

    start: Callable[[str], None] = lambda pid: None
    progress: Callable[[str, float | None, str], None] = lambda pid, fraction, message: None
    done: Callable[[Outcome], None] = lambda outcome: None
    warn: Callable[[str], None] = default_warn


def run_many(
    entries: Sequence[Entry],
    scale: str = "quick",
    *,
    n_seeds: int | None = None,
    root: Path = Path("results"),
    force: bool = False,
    backend: str = "local",
    jobs: int = 1,
    timeout: float | None = None,
    address: str | None = None,
    max_retries: int = 2,
    hooks: Hooks | None = None,
) -> list[Outcome]:
    """Run ``entries`` at ``scale`` on ``backend``; return their outcomes in the order given.

    ``backend="local"``: with ``jobs=1`` and no ``timeout`` the papers run one after the other in
    this process; otherwise each paper runs in its own worker process, ``jobs`` at a time.
    ``backend="ray"``: each paper is a Ray task on the cluster at ``address`` (a local instance if
    none is running and ``address`` is ``None``), asking for the paper's ``num_cpus`` and, at
    full scale, ``num_gpus``; a task whose worker dies is retried ``max_retries`` times.
    """
    hooks = hooks or Hooks()
    check_choice(backend, "backend", BACKENDS)
    check_scalar(jobs, "jobs", "int", min=1)
    if timeout is not None:
        check_scalar(timeout, "timeout", "real", min=0, inclusive="neither")
    check_scalar(max_retries, "max_retries", "int", min=0)
    ray = import_ray() if backend == "ray" else None
    outcomes: dict[int, Outcome] = {}
    pending: list[tuple[int, Job, Entry]] = []
    for i, entry in enumerate(entries):
        planned = plan(entry, scale, n_seeds=n_seeds, root=root, force=force, warn=hooks.warn)
        if isinstance(planned, Outcome):
            outcomes[i] = planned
            hooks.done(planned)
        else:
            pending.append((i, planned, entry))
    if pending:
        check_writable(root)
        if ray is not None:
            outcomes.update(_run_ray(ray, pending, root, address, timeout, max_retries, hooks))
        elif jobs == 1 and timeout is None:
            outcomes.update(_run_here(pending, root, hooks))
        else:
            outcomes.update(_run_processes(pending, root, jobs, timeout, hooks))
    return [outcomes[i] for i in range(len(entries))]


def _run_here(pending: list[tuple[int, Job, Entry]], root: Path, hooks: Hooks) -> dict[int, Outcome]:
    outcomes = {}
    for i, job, entry in pending:
        hooks.start(job.id)
        payload = execute(job, entry.module.reproduce, lambda f, m="", pid=job.id: hooks.progress(pid, f, m))
        outcomes[i] = commit(payload, root)
        hooks.done(outcomes[i])
    return outcomes


def _timed_out(timeout: float) -> str:
    return f"timed out after {timeout:g} s (killed; raise --timeout to give it longer)"


# ---------------------------------------------------------------- local worker processes


def _worker_main(job: Job, conn: Connection) -> None:
    """Body of a worker process: run the job, stream progress and the payload back to the driver.

    Workers are started with ``spawn``: they import the reproduce function by its module path
    (``Job.target``), so it must be a module-level function of an importable module."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle
    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)  # its own process group: stopping the worker stops whatever the reproduction started

    def stop(signum, frame):  # unwind, so that the temporary folder is removed
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        payload = run_job(job, progress=lambda fraction, message="": conn.send(("progress", fraction, message)),
                          started=lambda: conn.send(("started",)))
        conn.send(("result", payload))
    finally:
        conn.close()


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"worker process killed by {name} (exit code {code}) before it returned a result"
    return f"worker process exited with code {code} before it returned a result"


STARTUP_ALLOWANCE_S = 120.0  # a worker has this long to import its reproduction before its timeout counts


@dataclass
class _Worker:
    index: int
    job: Job
    process: Any
    conn: Connection
    started: float  # when the process was spawned, then when its reproduction began
    payload: Payload | None = None
    running: bool = False

    def deadline(self, timeout: float) -> float:
        return self.started + timeout + (0.0 if self.running else STARTUP_ALLOWANCE_S)


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Start children with SIGINT ignored, so that a Ctrl-C reaches only the driver."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _signal_group(process: Any, signum: int) -> None:
    """``signum`` to the worker's process group (the worker and every process it started); to the worker
    alone while it has not made its own group yet, or where there are no process groups."""
    if hasattr(os, "killpg"):
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signum)
            return
    if process.is_alive():
        with suppress(ProcessLookupError):
            os.kill(process.pid, signum)


def _stop(process: Any, grace: float = 2.0) -> None:
    """SIGTERM to the worker's process group (the worker cleans up), then SIGKILL to the group after ``grace``
    seconds; reap the worker. Processes the reproduction started (pools, servers) go with it."""
    if process.is_alive():
        _signal_group(process, signal.SIGTERM)
        process.join(grace)
    _signal_group(process, signal.SIGKILL)
    process.join()


def _run_processes(
    pending: list[tuple[int, Job, Entry]], root: Path, jobs: int, timeout: float | None, hooks: Hooks
) -> dict[int, Outcome]:
    context = multiprocessing.get_context("spawn")
    queue = deque(pending)
    running: list[_Worker] = []
    outcomes: dict[int, Outcome] = {}

    def finish(worker: _Worker, outcome: Outcome) -> None:
        running.remove(worker)
        worker.conn.close()
        outcomes[worker.index] = outcome
        hooks.done(outcome)

    try:
        while queue or running:
            while queue and len(running) < jobs:
                index, job, _ = queue.popleft()
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_worker_main, args=(job, send), name=f"icml25-{job.id}")
                with _sigint_ignored():
                    process.start()
                send.close()
                running.append(_Worker(index, job, process, receive, time.monotonic()))
                hooks.start(job.id)
            wait_s = None
            if timeout is not None:
                wait_s = max(0.0, min(w.deadline(timeout) for w in running) - time.monotonic())
            wait([w.conn for w in running] + [w.process.sentinel for w in running], wait_s)
            for worker in list(running):
                _drain(worker, hooks)
                if worker.payload is not None:
                    worker.process.join(10.0)  # it is exiting; stop it if something keeps it alive
                    _stop(worker.process)
                    finish(worker, commit(worker.payload, root))
                elif not worker.process.is_alive():
                    worker.process.join()
                    _drain(worker, hooks)
                    if worker.payload is not None:
                        finish(worker, commit(worker.payload, root))
                    else:
                        finish(worker, Outcome(worker.job.id, worker.job.scale, "failed",
                                               error=_exit_reason(worker.process.exitcode),
                                               seconds=time.monotonic() - worker.started))
                elif timeout is not None and time.monotonic() >= worker.deadline(timeout):
                    seconds = time.monotonic() - worker.started
                    _stop(worker.process)
                    finish(worker, Outcome(worker.job.id, worker.job.scale, "failed", error=_timed_out(timeout),
                                           seconds=seconds))
    finally:  # Ctrl-C, a store error, or a bug: stop every worker still running
        for worker in running:
            _stop(worker.process)
            worker.conn.close()
    return outcomes


def _drain(worker: _Worker, hooks: Hooks) -> None:
    """Read every message the worker has sent so far (progress, then its payload)."""
    try:
        while worker.payload is None and worker.conn.poll():
            kind, *rest = worker.conn.recv()
            if kind == "started":
                worker.started, worker.running = time.monotonic(), True
            elif kind == "progress":
                hooks.progress(worker.job.id, *rest)
            else:
                worker.payload = rest[0]
    except (EOFError, OSError):
        pass


# ---------------------------------------------------------------- Ray


def import_ray() -> Any:
    """Import Ray, or raise :class:`BackendUnavailableError` naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise BackendUnavailableError(RAY_HINT) from None
    return ray


def ray_task(job: Job) -> Iterator[tuple[str, Any]]:
    """The Ray task (a streaming generator): ``("started", None)`` once the reproduction is imported,
    ``("progress", (f, m))`` ..., then ``("result", payload)``.  The reproduction runs in a thread
    so that progress streams while it works."""
    import queue

    events: queue.Queue = queue.Queue()
    box: dict[str, Payload] = {}

    def progress(fraction: float | None, message: str = "") -> None:
        events.put(("progress", (fraction, message)))

    def work() -> None:
        try:
            box["payload"] = run_job(job, progress=progress, started=lambda: events.put(("started", None)))
        finally:
            events.put(None)

    threading.Thread(target=work, name=f"icml25-{job.id}", daemon=True).start()
    last = 0.0
    while (item := events.get()) is not None:
        if item[0] == "started" or time.monotonic() - last >= 0.5:  # at most two progress objects a second
            last = time.monotonic()
            yield item
    if "payload" not in box:
        raise RuntimeError(f"the worker thread of {job.id!r} ended without a result")
    yield "result", box["payload"]


def _ray_error(exc: BaseException, max_retries: int) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"Ray task failed ({max_retries} retries): {type(exc).__name__}: {first}"


def _run_ray(
    ray: Any,
    pending: list[tuple[int, Job, Entry]],
    root: Path,
    address: str | None,
    timeout: float | None,
    max_retries: int,
    hooks: Hooks,
) -> dict[int, Outcome]:
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, include_dashboard=False, logging_level="WARNING")
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise BackendUnavailableError(f"cannot connect to Ray at {address or 'a local instance'}: {exc}") from None
    task = ray.remote(ray_task)
    tasks: dict[Any, tuple[int, Job]] = {}
    started: dict[Any, float] = {}
    outcomes: dict[int, Outcome] = {}

    def finish(gen: Any, outcome: Outcome) -> None:
        index, _ = tasks.pop(gen)
        started.pop(gen, None)
        outcomes[index] = outcome
        hooks.done(outcome)

    try:
        for index, job, _ in pending:
            gen = task.options(num_cpus=job.num_cpus, num_gpus=job.num_gpus, max_retries=max_retries,
                               retry_exceptions=False, name=f"icml25:{job.id}:{job.scale}").remote(job)
            tasks[gen] = (index, job)
        while tasks:
            wait_s = 1.0
            if timeout is not None and started:
                wait_s = max(0.0, min(min(started.values()) + timeout - time.monotonic(), wait_s))
            ready, _ = ray.wait(list(tasks), num_returns=1, timeout=wait_s)
            for gen in ready:
                _, job = tasks[gen]
                try:
                    kind, value = ray.get(next(gen))
                except StopIteration:
                    finish(gen, Outcome(job.id, job.scale, "failed", error="Ray task ended without a result"))
                    continue
                except ray.exceptions.RayError as exc:
                    finish(gen, Outcome(job.id, job.scale, "failed", error=_ray_error(exc, max_retries),
                                        seconds=time.monotonic() - started.get(gen, time.monotonic())))
                    continue
                if kind == "started":
                    started[gen] = time.monotonic()
                    hooks.start(job.id)
                elif kind == "progress":
                    hooks.progress(job.id, *value)
                else:
                    finish(gen, commit(value, root))
            if timeout is not None:
                for gen, since in list(started.items()):
                    if time.monotonic() - since >= timeout:
                        ray.cancel(gen, force=True)
                        _, job = tasks[gen]
                        finish(gen, Outcome(job.id, job.scale, "failed", error=_timed_out(timeout),
                                            seconds=time.monotonic() - since))
    finally:
        for gen in tasks:
            ray.cancel(gen, force=True)
        if started_here:
            ray.shutdown()
    return outcomes
