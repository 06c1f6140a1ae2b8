"""Evaluation of candidate code in a sandbox: a separate process with CPU-time, memory and file-size limits,
a wall-clock deadline that kills its whole process group, an import allow-list, no network, and every
process reaped. The candidate only turns crystals into graphs; the constraint checks run here, in the
parent, on what it sends back (so candidate code cannot tamper with its own scores).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml25.materials.rep_codegen._child import ALLOWED_IMPORTS, BANNED_BUILTINS
from icml25.materials.rep_codegen.crystal import Crystal
from icml25.materials.rep_codegen.graph import Graph
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_instance, check_scalar, check_sequence

BANNED_ATTRIBUTES = ("load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile",
                     "tofile", "memmap", "ctypeslib", "ctypes", "f2py", "testing", "DataSource", "system", "popen")
MAX_MESSAGE = 256 * 2**20  # bytes of one answer of the child


class CandidateError(RuntimeError):
    """A candidate failed: it was rejected, raised, ran out of time or memory, or returned a bad graph."""


def screen_source(source: str) -> None:
    """Reject, before anything runs, code that does not parse, imports outside the allow-list, uses banned
    builtins (``open``, ``eval``, ...), dunder attributes or NumPy's file input/output; or has no ``represent``."""
    check_instance(source, "source", str)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise CandidateError(f"syntax error: {exc}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            bad = [n for n in names if n.split(".")[0] not in ALLOWED_IMPORTS or getattr(node, "level", 0)]
            if bad:
                raise CandidateError(f"forbidden import {bad[0]!r} (allowed: {', '.join(ALLOWED_IMPORTS)})")
        elif isinstance(node, ast.Name) and (node.id in BANNED_BUILTINS or node.id.startswith("__")):
            raise CandidateError(f"forbidden name {node.id!r}")
        elif isinstance(node, ast.Attribute) and (node.attr.startswith("__") or node.attr in BANNED_ATTRIBUTES):
            raise CandidateError(f"forbidden attribute {node.attr!r}")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "represent" for n in tree.body):
        raise CandidateError("the code defines no top-level function represent(lattice, frac_coords, numbers)")


def _limits(cpu_seconds: int, memory_bytes: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Sandbox:
    """One candidate in its own process: ``with Sandbox(source) as box: graphs = box.represent(crystals)``.

    Parameters
    ----------
    source : the candidate's Python source (screened with :func:`screen_source` first).
    timeout : wall-clock seconds for the whole session (start-up and every batch); also the CPU-time limit.
    memory_mb : the address-space limit of the child (``RLIMIT_AS``).

    Any failure raises :class:`CandidateError`, after which the process is gone. On exit the process group is
    killed and reaped whatever happened; ``pid`` stays readable for checks.
    """

    def __init__(self, source: str, timeout: float = 20.0, memory_mb: int = 1024) -> None:
        screen_source(source)
        self.source = source
        self.timeout = check_scalar(timeout, "timeout", "real", min=0.0, inclusive="neither")
        self.memory_mb = check_scalar(memory_mb, "memory_mb", "int", min=256)
        self.pid: int | None = None
        self._proc: subprocess.Popen | None = None
        self._deadline = 0.0

    def __enter__(self) -> Sandbox:
        self._deadline = time.monotonic() + self.timeout
        src_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": src_root, "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        cpu, mem = int(np.ceil(self.timeout)), self.memory_mb * 2**20
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "icml25.materials.rep_codegen._child"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, env=env, cwd=tempfile.gettempdir(),
            start_new_session=True, preexec_fn=lambda: _limits(cpu, mem))
        self.pid = self._proc.pid
        try:
            self._send(source=np.array(self.source))
            answer = self._receive()
        except CandidateError:
            self.close()
            raise
        if "error" in answer:
            self.close()
            raise CandidateError(str(answer["error"]))
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Kill the process group (if still there) and reap the child."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        self._stderr.close()

    def _fail(self, reason: str) -> CandidateError:
        proc = self._proc
        tail = ""
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
            self._stderr.seek(0)
            tail = self._stderr.read()[-600:].decode(errors="replace").strip()
            if code < 0:
                reason += f" (killed by {signal.Signals(-code).name})"
        self.close()
        return CandidateError(reason + (f"; stderr: {tail}" if tail else ""))

    def _send(self, **arrays: np.ndarray) -> None:
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        data = buf.getvalue()
        try:
            self._proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._fail("the candidate process died") from None

    def _read_exact(self, n: int) -> bytes:
        fd, chunks, got = self._proc.stdout.fileno(), [], 0
        while got < n:
            left = self._deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self._fail(f"timed out after {self.timeout:g} s wall-clock")
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise self._fail("the candidate process died")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _receive(self) -> dict[str, np.ndarray]:
        (size,) = struct.unpack("<Q", self._read_exact(8))
        if size > MAX_MESSAGE:
            raise self._fail(f"output too large ({size} bytes)")
        try:
            with np.load(io.BytesIO(self._read_exact(size)), allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
        except ValueError as exc:
            raise self._fail(f"unreadable answer: {exc}") from None

    def represent(self, crystals: Sequence[Crystal]) -> list[Graph]:
        """The candidate's graphs of ``crystals`` (one batch, one round trip)."""
        if self._proc is None:
            raise CandidateError("the sandbox is closed")
        crystals = check_sequence(crystals, "crystals", min_len=1,
                                  item=lambda c, n: check_instance(c, n, Crystal))
        self._send(lattices=np.stack([c.lattice for c in crystals]),
                   frac=np.concatenate([c.frac_coords for c in crystals]),
                   numbers=np.concatenate([c.numbers for c in crystals]),
                   counts=np.array([c.n_atoms for c in crystals]))
        answer = self._receive()
        if "error" in answer:
            raise CandidateError(str(answer["error"]))
        graphs = []
        try:
            shapes = answer["shapes"].reshape(len(crystals), 4, 2)
            offsets = np.zeros(4, dtype=np.int64)
            flat = [answer[k] for k in ("nodes", "index", "edges", "pseudo")]
            for crystal, shape in zip(crystals, shapes, strict=True):
                parts = []
                for k in range(4):
                    size = int(np.prod(shape[k]))
                    parts.append(flat[k][offsets[k]:offsets[k] + size].reshape(shape[k]))
                    offsets[k] += size
                g = Graph(*parts)
                if g.n_nodes != crystal.n_atoms:
                    raise ValueError(f"{g.n_nodes} nodes for {crystal.n_atoms} atoms")
                graphs.append(g)
        except (KeyError, TypeError, ValueError) as exc:
            raise CandidateError(f"bad graph: {exc}") from None
        return graphs


@dataclass
class EvalReport:
    """What evaluating one candidate gave: per-constraint results, the error if it failed, its cost."""

    source: str
    passed: dict[str, bool] = field(default_factory=dict)
    violations: dict[str, float] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    pid: int | None = None

    @property
    def n_passed(self) -> int:
        return sum(self.passed.values())

    @property
    def ok(self) -> bool:
        return self.error is None

    def feedback(self) -> str:
        """The structured report as text, what the evolver is shown."""
        if self.error is not None:
            return f"FAILED to run: {self.error}"
        lines = [f"{name}: {'pass' if ok else 'FAIL'} (violation {self.violations[name]:.3g}; {self.details[name]})"
                 for name, ok in self.passed.items()]
        return "\n".join(lines)


def run_candidate(source: str, bank: Sequence[Crystal], constraints: Sequence[Any], timeout: float = 20.0,
                  seed: Seed = 0, memory_mb: int = 1024) -> EvalReport:
    """Evaluate ``source`` in a :class:`Sandbox` against every constraint on ``bank`` (a failure is a report,
    never an exception). ``seed`` fixes the checkers' random transformations."""
    check_instance(source, "source", str)
    bank = check_sequence(bank, "bank", min_len=1, item=lambda c, n: check_instance(c, n, Crystal))
    constraints = check_sequence(constraints, "constraints", min_len=1)
    for i, c in enumerate(constraints):
        if not callable(getattr(c, "check", None)):
            raise TypeError(f"constraints[{i}] must have a check(represent, bank, rng) method, got {c!r}")
    timeout = check_scalar(timeout, "timeout", "real", min=0.0, inclusive="neither")
    rng = as_generator(seed)
    report = EvalReport(source=source)
    start = time.perf_counter()
    try:
        box = Sandbox(source, timeout=timeout, memory_mb=memory_mb)
        try:
            with box:
                report.pid = box.pid
                for constraint, child in zip(constraints, rng.spawn(len(constraints)), strict=True):
                    result = constraint.check(box.represent, bank, child)
                    report.passed[constraint.name] = result.passed
                    report.violations[constraint.name] = result.violation
                    report.details[constraint.name] = result.detail
        finally:
            report.pid = box.pid
    except CandidateError as exc:
        report.error = str(exc)
        report.passed = {c.name: False for c in constraints}
        report.violations = {c.name: float("inf") for c in constraints}
        report.details = {c.name: "not evaluated" for c in constraints}
    report.seconds = time.perf_counter() - start
    return report
