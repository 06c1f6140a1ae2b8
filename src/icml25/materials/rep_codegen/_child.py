"""The sandboxed child process (run as ``python -m``; imports NumPy only, never the rest of icml25).

Protocol on two pipes, every message an 8-byte little-endian length then a ``.npz`` payload without
pickles: the parent sends the candidate source, then batches of crystals; the child answers each batch
with the graphs or one error string. The candidate's own prints never reach the protocol pipe.
"""

import builtins
import collections
import io
import os
import socket
import struct
import sys
import traceback

import numpy as np

ALLOWED_IMPORTS = ("numpy", "math", "itertools", "functools", "collections", "heapq", "operator", "scipy")
BANNED_BUILTINS = ("open", "exec", "eval", "compile", "input", "breakpoint", "globals", "locals", "vars",
                   "setattr", "delattr", "memoryview", "help", "exit", "quit")
MAX_ENTRIES = 5_000_000  # floats per graph the child is willing to send back

Graph = collections.namedtuple("Graph", "node_feats edge_index edge_feats edge_pseudo", defaults=(None,))


def _no_network(*args, **kwargs):
    raise OSError("network access is disabled in the sandbox")


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level != 0 or name.split(".")[0] not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed in a candidate (allowed: {', '.join(ALLOWED_IMPORTS)})")
    return builtins.__import__(name, globals, locals, fromlist, level)


def _read(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    return np.load(io.BytesIO(stream.read(size)), allow_pickle=False)


def _write(stream, **arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    data = buf.getvalue()
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _as_arrays(out):
    if isinstance(out, dict):
        out = Graph(**out)
    if not isinstance(out, tuple) or len(out) not in (3, 4):
        raise TypeError(f"represent must return a Graph (node_feats, edge_index, edge_feats[, edge_pseudo]), "
                        f"got {type(out).__name__}")
    nodes, index, edges = (np.asarray(out[k]) for k in range(3))
    pseudo = np.zeros((index.shape[-1] if index.ndim == 2 else 0, 0)) if len(out) < 4 or out[3] is None \
        else np.asarray(out[3])
    arrays = [nodes, index, edges, pseudo]
    if sum(a.size for a in arrays) > MAX_ENTRIES:
        raise ValueError(f"graph too large (more than {MAX_ENTRIES} entries)")
    for a in arrays:
        if a.ndim != 2 or a.dtype.kind not in "biuf":
            raise ValueError(f"represent must return 2-d numeric arrays, got shape {a.shape} dtype {a.dtype}")
    if index.dtype.kind == "f":
        raise ValueError("edge_index must be an integer array")
    return arrays


def _pack(graphs):
    """All graphs in five arrays: shapes (G, 4, 2) and the flattened, concatenated entries of each kind."""
    shapes = np.array([[a.shape for a in g] for g in graphs], dtype=np.int64)
    return {"shapes": shapes,
            "nodes": np.concatenate([g[0].ravel() for g in graphs]).astype(float),
            "index": np.concatenate([g[1].ravel() for g in graphs]).astype(np.int64),
            "edges": np.concatenate([g[2].ravel() for g in graphs]).astype(float),
            "pseudo": np.concatenate([g[3].ravel() for g in graphs]).astype(float)}


def main():
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    socket.socket = socket.create_connection = socket.getaddrinfo = socket.socketpair = _no_network
    first = _read(proto_in)
    source = str(first["source"])
    safe = {k: v for k, v in vars(builtins).items() if k not in BANNED_BUILTINS}
    safe["__import__"] = _guarded_import
    namespace = {"__builtins__": safe, "__name__": "candidate", "Graph": Graph, "np": np}
    try:
        exec(compile(source, "<candidate>", "exec"), namespace)
        represent = namespace["represent"]
        if not callable(represent):
            raise TypeError("represent must be a function")
    except BaseException:  # noqa: BLE001 - every failure of the candidate is reported, never raised
        _write(proto_out, error=np.array(traceback.format_exc(limit=3)[-2000:]))
        return
    _write(proto_out, ok=np.array(1))
    while (request := _read(proto_in)) is not None:
        counts = request["counts"]
        starts = np.concatenate([[0], np.cumsum(counts)])
        try:
            graphs = []
            for i in range(len(counts)):
                part = slice(starts[i], starts[i + 1])
                out = represent(request["lattices"][i].copy(), request["frac"][part].copy(),
                                request["numbers"][part].copy())
                graphs.append(_as_arrays(out))
            _write(proto_out, **_pack(graphs))
        except BaseException:  # noqa: BLE001 - every failure of the candidate is reported, never raised
            _write(proto_out, error=np.array(traceback.format_exc(limit=3)[-2000:]))


if __name__ == "__main__":
    main()
