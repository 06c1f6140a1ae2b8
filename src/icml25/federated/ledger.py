"""Communication ledger: the bits every message actually serialized, per round, client and direction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from icml25.federated.messages import payload_bits, serialize
from icml25.utils.validation import check_choice, check_instance, check_scalar, check_sequence

__all__ = ["CommunicationLedger", "LedgerEntry"]

DIRECTIONS = ("down", "up")
KINDS = ("payload", "message")


@dataclass(frozen=True)
class LedgerEntry:
    """One message: ``down`` is server -> client, ``up`` is client -> server."""

    round: int
    client: int
    direction: str
    payload_bits: int
    message_bits: int


@dataclass
class CommunicationLedger:
    """Counts bits of serialized messages.

    ``payload_bits`` counts the arrays' raw buffers; ``message_bits`` the whole serialized message,
    headers (names, dtypes, shapes) included.
    """

    entries: list[LedgerEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.entries = check_sequence(self.entries, "entries",
                                      item=lambda e, name: check_instance(e, name, LedgerEntry))

    def record(self, round: int, client: int, direction: str, arrays: Mapping[str, np.ndarray]) -> bytes:
        """Serialize ``arrays``, record its size and return the bytes (what goes over the wire).

        ``round`` and ``client`` are ints >= 0; ``direction`` is ``"down"`` or ``"up"``.
        """
        check_scalar(round, "round", "int", min=0)
        check_scalar(client, "client", "int", min=0)
        check_choice(direction, "direction", DIRECTIONS)
        blob = serialize(arrays)
        self.entries.append(LedgerEntry(round, client, direction, payload_bits(arrays), 8 * len(blob)))
        return blob

    def total(self, direction: str | None = None, kind: str = "payload") -> int:
        """Sum of bits over all messages (optionally of one direction); ``kind`` is payload or message."""
        check_choice(kind, "kind", KINDS)
        check_choice(direction, "direction", (*DIRECTIONS, None))
        return sum(getattr(e, f"{kind}_bits") for e in self.entries if direction in (None, e.direction))

    def per_round(self, direction: str | None = None, kind: str = "payload") -> dict[int, int]:
        """Bits per round (optionally of one direction)."""
        check_choice(kind, "kind", KINDS)
        check_choice(direction, "direction", (*DIRECTIONS, None))
        out: dict[int, int] = {}
        for e in self.entries:
            if direction in (None, e.direction):
                out[e.round] = out.get(e.round, 0) + getattr(e, f"{kind}_bits")
        return out

    def summary(self) -> dict[str, int]:
        """JSON-able totals: payload and message bits up, down and overall, and the message count."""
        return {"up_payload_bits": self.total("up"), "down_payload_bits": self.total("down"),
                "up_message_bits": self.total("up", "message"), "down_message_bits": self.total("down", "message"),
                "total_payload_bits": self.total(), "messages": len(self.entries)}
