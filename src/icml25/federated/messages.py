"""Messages of the federated runtime, shaped like Flower's: named arrays, a config and metrics.

A message carries ``arrays`` (``dict[str, numpy.ndarray]``), plus ``config`` (server -> client) or
``num_examples`` and ``metrics`` (client -> server).  Config and metric values are scalars
(bool, int, float, str, bytes), as in Flower.  :func:`serialize` turns named arrays into bytes
(a small header per array and its raw buffer); the communication ledger counts exactly those bytes.
Sub-byte integers (4-bit weights, say) travel packed with :func:`pack_uint`.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from icml25.utils.validation import check_array, check_instance, check_scalar

__all__ = [
    "Scalar", "FitIns", "FitRes", "EvaluateIns", "EvaluateRes", "MalformedMessageError",
    "check_arrays", "check_scalars", "check_fit_res", "serialize", "deserialize", "payload_bits",
    "pack_uint", "unpack_uint",
]

Scalar = bool | int | float | str | bytes
_SCALARS = (bool, int, float, str, bytes, np.integer, np.floating, np.bool_)


class MalformedMessageError(ValueError):
    """A message whose arrays, config or metrics break the message contract."""


@dataclass
class FitIns:
    """Server -> client: the arrays to train from and the round's config."""

    arrays: dict[str, np.ndarray]
    config: dict[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_message(self, "arrays", "config")


@dataclass
class FitRes:
    """Client -> server: the arrays produced by local training, its example count and metrics."""

    arrays: dict[str, np.ndarray]
    num_examples: int
    metrics: dict[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_message(self, "arrays", "metrics")


@dataclass
class EvaluateIns:
    """Server -> client: the arrays to evaluate and the config."""

    arrays: dict[str, np.ndarray]
    config: dict[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_message(self, "arrays", "config")


@dataclass
class EvaluateRes:
    """Client -> server: loss, example count and metrics of a local evaluation."""

    loss: float
    num_examples: int
    metrics: dict[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            check_scalar(self.loss, "loss", "real")
        except (TypeError, ValueError) as exc:
            raise MalformedMessageError(f"EvaluateRes.{exc}") from None
        _check_message(self, None, "metrics")


def _check_message(message: object, arrays: str | None, scalars: str) -> None:
    """A message's fields obey the contract (else MalformedMessageError naming the field)."""
    kind = type(message).__name__
    if arrays is not None:
        check_arrays(getattr(message, arrays), f"{kind}.{arrays}")
    check_scalars(getattr(message, scalars), f"{kind}.{scalars}")
    if hasattr(message, "num_examples"):
        try:
            check_scalar(message.num_examples, "num_examples", "int", min=0)
        except (TypeError, ValueError) as exc:
            raise MalformedMessageError(f"{kind}.{exc}") from None


def check_arrays(arrays: object, what: str = "arrays") -> dict[str, np.ndarray]:
    """Return ``arrays`` if it is a mapping of str to finite numeric ndarrays, else raise MalformedMessageError."""
    if not isinstance(arrays, Mapping):
        raise MalformedMessageError(f"{what} must be a dict of name -> numpy array, got {type(arrays).__name__}")
    for name, value in arrays.items():
        if not isinstance(name, str) or not name:
            raise MalformedMessageError(f"{what}: array names must be non-empty strings, got {name!r}")
        if not isinstance(value, np.ndarray):
            raise MalformedMessageError(f"{what}[{name!r}] must be a numpy array, got {type(value).__name__}")
        if value.dtype.kind not in "biuf":
            raise MalformedMessageError(f"{what}[{name!r}] must be numeric (bool, int, uint, float), got {value.dtype}")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise MalformedMessageError(f"{what}[{name!r}] contains NaN or Inf")
    return dict(arrays)


def check_scalars(values: object, what: str) -> dict[str, Scalar]:
    """Return ``values`` if it is a mapping of str to scalars (Flower's config/metrics), else raise."""
    if not isinstance(values, Mapping):
        raise MalformedMessageError(f"{what} must be a dict of name -> scalar, got {type(values).__name__}")
    for name, value in values.items():
        if not isinstance(name, str) or not isinstance(value, _SCALARS):
            raise MalformedMessageError(f"{what}[{name!r}] must be bool, int, float, str or bytes, got "
                                   f"{type(value).__name__}")
    return dict(values)


def check_fit_res(res: object) -> FitRes:
    """Validate a client's reply to ``fit``; raise MalformedMessageError naming what is wrong."""
    if not isinstance(res, FitRes):
        raise MalformedMessageError(f"fit must return a FitRes, got {type(res).__name__}")
    check_arrays(res.arrays, "FitRes.arrays")
    check_scalars(res.metrics, "FitRes.metrics")
    try:
        check_scalar(res.num_examples, "FitRes.num_examples", "int", min=0)
    except (TypeError, ValueError) as exc:
        raise MalformedMessageError(str(exc)) from None
    return res


def serialize(arrays: Mapping[str, np.ndarray]) -> bytes:
    """Serialize named arrays: per array a length-prefixed JSON header (name, dtype, shape) and raw bytes."""
    chunks = []
    for name, value in check_arrays(arrays).items():
        # the shape is taken from the array itself: np.ascontiguousarray would turn a 0-d array into shape (1,)
        header = json.dumps({"n": name, "d": value.dtype.str, "s": list(value.shape)}).encode()
        chunks += [struct.pack("<I", len(header)), header, struct.pack("<Q", value.nbytes), value.tobytes(order="C")]
    return b"".join(chunks)


def deserialize(blob: bytes) -> dict[str, np.ndarray]:
    """Inverse of :func:`serialize` (shapes, 0-d included, and dtypes are restored exactly).

    ``blob`` is ``bytes`` (or ``bytearray`` / ``memoryview``); a blob that :func:`serialize` did not
    produce raises :class:`MalformedMessageError`.
    """
    check_instance(blob, "blob", (bytes, bytearray, memoryview), "bytes")
    blob = bytes(blob)
    arrays, pos = {}, 0
    try:
        while pos < len(blob):
            (n_header,) = struct.unpack_from("<I", blob, pos)
            header = json.loads(blob[pos + 4: pos + 4 + n_header])
            pos += 4 + n_header
            (n_bytes,) = struct.unpack_from("<Q", blob, pos)
            pos += 8
            if pos + n_bytes > len(blob):
                raise ValueError(f"array {header['n']!r} needs {n_bytes} bytes, {len(blob) - pos} left")
            value = np.frombuffer(blob[pos: pos + n_bytes], dtype=header["d"]).reshape(header["s"]).copy()
            arrays[header["n"]] = value
            pos += n_bytes
    except (struct.error, ValueError, TypeError, KeyError, IndexError) as exc:
        raise MalformedMessageError(f"blob is not a serialized message: {exc}") from None
    return arrays


def payload_bits(arrays: Mapping[str, np.ndarray]) -> int:
    """Bits of array data a message serializes (its raw buffers, without the per-array headers)."""
    return 8 * sum(v.nbytes for v in check_arrays(arrays).values())


def pack_uint(values: np.ndarray, bits: int) -> np.ndarray:
    """Pack unsigned integers < 2**bits into a uint8 array, ``bits`` bits each (little-endian bit order)."""
    bits = check_scalar(bits, "bits", "int", min=1, max=16)
    if values is None:
        raise TypeError("values must be an integer array, got None")
    values = np.asarray(values)
    if values.dtype.kind not in "iu" or (values.size and (values.min() < 0 or values.max() >= 2**bits)):
        raise ValueError(f"values must be integers in [0, 2**{bits}), got dtype {values.dtype}")
    flat = values.astype(np.uint32).ravel()
    planes = (flat[:, None] >> np.arange(bits, dtype=np.uint32)) & 1
    return np.packbits(planes.astype(np.uint8).ravel(), bitorder="little")


def unpack_uint(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack_uint`: ``count`` unsigned integers of ``bits`` bits each."""
    bits = check_scalar(bits, "bits", "int", min=1, max=16)
    count = check_scalar(count, "count", "int", min=0)
    packed = check_array(packed, "packed", ndim=1, dtype=None)
    if packed.dtype != np.uint8:
        raise TypeError(f"packed must be a uint8 array (from pack_uint), got dtype {packed.dtype}")
    planes = np.unpackbits(packed, bitorder="little")[: bits * count]
    if planes.size != bits * count:
        raise ValueError(f"packed array holds {planes.size} bits, need {bits * count}")
    weights = (1 << np.arange(bits, dtype=np.uint32))
    return (planes.reshape(count, bits).astype(np.uint32) * weights).sum(axis=1).astype(np.uint32)
