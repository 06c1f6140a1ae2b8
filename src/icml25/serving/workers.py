"""The worker processes of the serving system: encode (E), prefill (P), encode+prefill (EP, for PD), decode (D)
and aggregated (E+P+D in one, vLLM-style).  All roles share :func:`run_prefill` and :class:`DecodeBatch`, so the
three modes compute the same greedy tokens (Singh et al., arXiv 2501.05460, Section 3).

Each worker is one OS process (``python -m icml25.serving.workers ADDRESS NAME``, the authentication key on its
stdin) that connects back to the system over a local socket (``multiprocessing.connection``).  Torch runs on
``threads`` intra-op threads inside it: the system starts the worker with ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``
set in the worker's own environment (the user's process and its environment are never changed).  A worker exits
when it reads ``None``, and on its own when its connection to the system closes.

Worker -> system messages (tuples on one shared queue): ``("ready", name, info)``, ``("encoded", name, items,
seconds)``, ``("first", name, rid, token, timing, kv_handle)``, ``("tokens", name, items, seconds, batch, ctx)``,
``("failed", name, rid, message)``, ``("stats", name, stats)``.
"""

from __future__ import annotations

import os
import queue
import sys
import time
import traceback
from collections import deque
from dataclasses import dataclass, field

import numpy as np

ROLES = ("encode", "prefill", "encode_prefill", "decode", "aggregated")
POLL_S = 0.2


@dataclass
class WorkerSpec:
    """What a worker process needs: its role and name, the model config and weights file, limits, the shm prefix."""

    role: str
    name: str
    model_config: dict
    state_path: str
    prefix: str
    max_images_per_batch: int = 8
    max_prefill_tokens: int = 4096
    max_decode_batch: int = 32
    parent_pid: int = field(default_factory=os.getpid)


class _Memory:
    """Tensor accounting of one worker: parameter bytes, activation peak and cache peak (bytes)."""

    def __init__(self, params: int) -> None:
        self.params, self.activation_peak, self.cache_peak, self.cache_now = params, 0, 0, 0

    def activation(self, nbytes: float) -> None:
        self.activation_peak = max(self.activation_peak, int(nbytes))

    def cache(self, delta: int) -> None:
        self.cache_now += delta
        self.cache_peak = max(self.cache_peak, self.cache_now)


def encode_activation_bytes(model, n_images: int) -> float:
    """Largest intermediate of an encode batch: the MLP hidden plus one layer's attention scores."""
    c, size = model.enc_cfg, model.dtype.itemsize
    t = c.tokens_per_image
    return n_images * (t * 4 * c.dim + c.heads * t * t) * size


def prefill_activation_bytes(model, n_tokens: int) -> float:
    """Largest intermediate of a prefill: the MLP hidden plus one layer's attention scores."""
    c, size = model.llm_cfg, model.dtype.itemsize
    return (n_tokens * 4 * c.dim + c.heads * n_tokens * n_tokens) * size


def run_prefill(model, prompt: list[int], mm_tokens):
    """Prefill one request; returns (first greedy token, KV cache)."""
    import torch

    mm = None if mm_tokens is None else mm_tokens.reshape(-1, mm_tokens.shape[-1])
    logits, kv = model.prefill(torch.tensor(prompt, dtype=torch.long), mm)
    return int(logits.argmax()), kv


@dataclass
class _Seq:
    cache: object
    length: int
    last: int
    remaining: int
    stop: int | None


class DecodeBatch:
    """Continuous batching of decode steps: requests join and leave between steps (Orca/vLLM-style)."""

    def __init__(self, model, max_batch: int) -> None:
        self.model, self.max_batch = model, max_batch
        self.active: dict[str, _Seq] = {}
        self.waiting: deque[tuple[str, _Seq]] = deque()

    def add(self, rid: str, kv, first_token: int, max_new_tokens: int, stop: int | None) -> None:
        """Add a request whose prefill produced ``kv`` and ``first_token`` (already emitted)."""
        from icml25.serving.model import grow_cache

        n = kv.shape[3]
        self.waiting.append((rid, _Seq(grow_cache(kv, n + max_new_tokens), n, first_token, max_new_tokens - 1, stop)))

    def __len__(self) -> int:
        return len(self.active) + len(self.waiting)

    def step(self) -> tuple[list[tuple[str, int, bool]], int, int]:
        """One decode step over the active batch; returns ([(rid, token, done)], batch size, context tokens)."""
        while self.waiting and len(self.active) < self.max_batch:
            rid, seq = self.waiting.popleft()
            self.active[rid] = seq
        rids = list(self.active)
        seqs = [self.active[r] for r in rids]
        import torch

        logits = self.model.decode_step(torch.tensor([s.last for s in seqs]), [s.cache for s in seqs],
                                        [s.length for s in seqs])
        ctx = sum(s.length for s in seqs)
        out = []
        for rid, seq, row in zip(rids, seqs, logits, strict=True):
            token = int(row.argmax())
            seq.last, seq.length, seq.remaining = token, seq.length + 1, seq.remaining - 1
            done = seq.remaining <= 0 or token == seq.stop
            out.append((rid, token, done))
            if done:
                del self.active[rid]
        return out, len(seqs), ctx

    def cache_bytes(self) -> int:
        return sum(s.cache.numel() * s.cache.element_size() for s in self.active.values())


def _build(spec: WorkerSpec):
    from icml25.serving.model import model_from_config

    model = model_from_config(spec.model_config, spec.state_path)
    if spec.role in ("prefill", "decode"):
        model.vision = None  # the LM-stage workers hold no encoder weights
    elif spec.role == "encode":
        for name in ("tok", "pos", "blocks", "ln_f", "head"):
            setattr(model, name, None)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return model, _Memory(params)


def _encode(model, images: np.ndarray, max_batch: int):
    """Encode in batches of at most ``max_batch`` images (the memory bound on encoder activations)."""
    import torch

    x = torch.from_numpy(images)
    return torch.cat([model.encode(x[i:i + max_batch]) for i in range(0, len(x), max_batch)])


def _stats(spec: WorkerSpec, mem: _Memory) -> dict:
    import resource

    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"role": spec.role, "pid": os.getpid(), "param_bytes": mem.params, "activation_peak": mem.activation_peak,
            "cache_peak": mem.cache_peak, "rss": rss, "peak_rss": peak, "cpu_seconds": time.process_time()}


def worker_main(spec: WorkerSpec, inq, outq) -> None:
    """Entry point of a worker process: build the model, then serve messages until ``None``."""
    try:
        model, mem = _build(spec)
        outq.put(("ready", spec.name, {"pid": os.getpid(), "param_bytes": mem.params,
                                       "startup_cpu_seconds": time.process_time()}))
        loop = {"encode": _encode_loop, "prefill": _prefill_loop, "encode_prefill": _prefill_loop,
                "decode": _decode_loop, "aggregated": _aggregated_loop}[spec.role]
        loop(spec, model, mem, inq, outq)
    except KeyboardInterrupt:
        pass
    except Exception:  # the system turns this into errors for the in-flight requests
        outq.put(("crashed", spec.name, traceback.format_exc()))
        raise


class Channel:
    """A worker's end of its connection, with queue-like ``put`` / ``get``; a closed connection ends the worker."""

    def __init__(self, conn) -> None:
        self.conn = conn

    def put(self, msg) -> None:
        try:
            self.conn.send(msg)
        except (OSError, EOFError):
            raise SystemExit(0) from None

    def get(self, timeout: float | None):
        try:
            if self.conn.poll(timeout):
                return self.conn.recv()
        except (OSError, EOFError):
            raise SystemExit(0) from None
        raise queue.Empty


def _get(spec: WorkerSpec, inq, block: bool):
    """The next message; ``_EMPTY`` when there is none (non-blocking); SystemExit when the parent is gone."""
    while True:
        try:
            return inq.get(POLL_S if block else 0)
        except queue.Empty:
            if os.getppid() != spec.parent_pid:
                raise SystemExit(0) from None
            if not block:
                return _EMPTY


_EMPTY = ("empty",)


def _control(spec, mem, msg, outq, extra=None) -> bool:
    """Handle ``None`` (stop: returns True) and ``("stats",)``."""
    if msg is None:
        return True
    if msg[0] == "stats":
        stats = _stats(spec, mem)
        stats.update(extra or {})
        outq.put(("stats", spec.name, stats))
    return False


def _encode_loop(spec: WorkerSpec, model, mem: _Memory, inq, outq) -> None:
    from icml25.serving import transfer

    pending: deque = deque()
    while True:
        msg = _get(spec, inq, block=not pending)
        while msg is not _EMPTY:
            if _control(spec, mem, msg, outq):
                return
            if msg[0] == "encode":
                pending.extend(msg[1])
            msg = _get(spec, inq, block=False)
        if not pending:
            continue
        batch = [pending.popleft() for _ in range(min(spec.max_images_per_batch, len(pending)))]
        start, cpu = time.perf_counter(), time.process_time()
        mm = _encode(model, np.stack([img for _, _, img in batch]), spec.max_images_per_batch)
        mem.activation(encode_activation_bytes(model, len(batch)))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        t0 = time.perf_counter()
        items = [(rid, idx, transfer.put(mm[i], spec.prefix)) for i, (rid, idx, _) in enumerate(batch)]
        outq.put(("encoded", spec.name, items, seconds, time.perf_counter() - t0, cpu))


def _prefill_loop(spec: WorkerSpec, model, mem: _Memory, inq, outq) -> None:
    import torch

    from icml25.serving import transfer

    while True:
        msg = _get(spec, inq, block=True)
        if _control(spec, mem, msg, outq):
            return
        if msg[0] != "prefill":
            continue
        _, rid, prompt, handles, images = msg
        timing = {}
        try:
            t0 = time.perf_counter()
            if images is not None:  # PD: this worker encodes too
                mm = _encode(model, images, spec.max_images_per_batch)
                mem.activation(encode_activation_bytes(model, min(len(images), spec.max_images_per_batch)))
                timing["encode"] = (len(images), time.perf_counter() - t0)
            elif handles:
                mm = torch.cat([transfer.take(h, unlink=False) for h in handles])
                timing["mm_transfer"] = (sum(h.nbytes for h in handles), time.perf_counter() - t0)
            else:
                mm = None
            t1 = time.perf_counter()
            token, kv = run_prefill(model, prompt, mm)
            n = kv.shape[3]
            mem.activation(prefill_activation_bytes(model, n))
            timing["prefill"] = (n, time.perf_counter() - t1)
            t2 = time.perf_counter()
            handle = transfer.put(kv, spec.prefix)
            timing["kv_put"] = (handle.nbytes, time.perf_counter() - t2)
        except ValueError as error:
            outq.put(("failed", spec.name, rid, str(error)))
            continue
        outq.put(("first", spec.name, rid, token, timing, handle))


def _decode_loop(spec: WorkerSpec, model, mem: _Memory, inq, outq) -> None:
    from icml25.serving import transfer

    batch = DecodeBatch(model, spec.max_decode_batch)
    last = None
    while True:
        if not len(batch):
            last = None
        msg = _get(spec, inq, block=not len(batch))
        while msg is not _EMPTY:
            if _control(spec, mem, msg, outq):
                return
            if msg[0] == "decode":
                _, rid, handle, first, max_new, stop = msg
                t0 = time.perf_counter()
                kv = transfer.take(handle)
                outq.put(("transfer", spec.name, handle.nbytes, time.perf_counter() - t0))
                batch.add(rid, kv, first, max_new, stop)
            msg = _get(spec, inq, block=False)
        if len(batch):
            last = _decode_once(batch, mem, spec, outq, last)


def _decode_once(batch: DecodeBatch, mem: _Memory, spec: WorkerSpec, outq, since: float | None) -> float:
    """One decode step; the profiled seconds are the step's period: from ``since`` (the end of the previous step,
    when the worker did nothing else in between) or from the step's start.  Returns the end time."""
    start = time.perf_counter()
    items, size, ctx = batch.step()
    end = time.perf_counter()
    mem.cache_peak = max(mem.cache_peak, batch.cache_bytes())
    outq.put(("tokens", spec.name, items, end - (start if since is None else since), size, ctx))
    return end


def _aggregated_loop(spec: WorkerSpec, model, mem: _Memory, inq, outq) -> None:
    """vLLM-style: one process encodes, prefills and decodes; waiting prefills go first (prefill priority)."""
    batch = DecodeBatch(model, spec.max_decode_batch)
    waiting: deque = deque()
    last = None
    while True:
        if not len(batch):
            last = None
        msg = _get(spec, inq, block=not (len(batch) or waiting))
        while msg is not _EMPTY:
            if _control(spec, mem, msg, outq):
                return
            if msg[0] == "request":
                waiting.append(msg[1:])
            msg = _get(spec, inq, block=False)
        budget = spec.max_prefill_tokens
        while waiting and (budget == spec.max_prefill_tokens or waiting[0][4] <= budget):
            rid, prompt, images, max_new, n_tokens, stop = waiting.popleft()
            budget -= n_tokens
            timing = {}
            try:
                t0 = time.perf_counter()
                mm = None
                if images is not None:
                    mm = _encode(model, images, spec.max_images_per_batch)
                    mem.activation(encode_activation_bytes(model, min(len(images), spec.max_images_per_batch)))
                    timing["encode"] = (len(images), time.perf_counter() - t0)
                t1 = time.perf_counter()
                token, kv = run_prefill(model, prompt, mm)
                mem.activation(prefill_activation_bytes(model, kv.shape[3]))
                timing["prefill"] = (kv.shape[3], time.perf_counter() - t1)
            except ValueError as error:
                outq.put(("failed", spec.name, rid, str(error)))
                continue
            outq.put(("first", spec.name, rid, token, timing, None))
            last = None  # a prefill ran: the next decode period starts at its step
            if max_new > 1 and token != stop:
                batch.add(rid, kv, token, max_new, stop)
        if len(batch) and not waiting:
            last = _decode_once(batch, mem, spec, outq, last)


def _run_from_command_line(argv: list[str]) -> None:
    """``python -m icml25.serving.workers ADDRESS NAME``: connect, receive the spec, serve."""
    from multiprocessing.connection import Client

    address, name = argv
    key = bytes.fromhex(sys.stdin.readline().strip())
    conn = Client(address, family="AF_UNIX", authkey=key)
    conn.send(("hello", name))
    spec = conn.recv()
    channel = Channel(conn)
    worker_main(spec, channel, channel)


if __name__ == "__main__":
    _run_from_command_line(sys.argv[1:])
