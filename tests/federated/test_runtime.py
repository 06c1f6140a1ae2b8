import numpy as np
import pytest

from icml25.federated import (
    Client,
    CommunicationLedger,
    FedAvg,
    FitRes,
    MalformedMessageError,
    RoundFailedError,
    deserialize,
    pack_uint,
    payload_bits,
    sample_clients,
    serialize,
    simulate,
    unpack_uint,
    weighted_average,
)


class Shift(Client):
    def __init__(self, c, n=1):
        self.c, self.n = c, n

    def fit(self, ins):
        return FitRes({"w": ins.arrays["w"] + self.c}, num_examples=self.n, metrics={"c": self.c})


class Broken(Client):
    def __init__(self, reply):
        self.reply = reply

    def fit(self, ins):
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply() if callable(self.reply) else self.reply


def start(n=2):
    return FedAvg({"w": np.zeros(n, np.float32)})


def test_serialize_roundtrip_and_bits():
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, 2], dtype=np.int8)}
    back = deserialize(serialize(arrays))
    assert set(back) == {"a", "b"} and back["a"].dtype == np.float32 and back["a"].shape == (2, 3)
    np.testing.assert_array_equal(back["b"], arrays["b"])
    assert payload_bits(arrays) == 6 * 32 + 2 * 8


@pytest.mark.parametrize("bits", [1, 3, 4, 8, 12])
def test_pack_uint_roundtrip_and_size(bits):
    rng = np.random.default_rng(bits)
    values = rng.integers(0, 2**bits, size=101)
    packed = pack_uint(values, bits)
    assert packed.dtype == np.uint8 and packed.size == -(-101 * bits // 8)
    np.testing.assert_array_equal(unpack_uint(packed, bits, 101), values)


def test_pack_uint_rejects_out_of_range():
    with pytest.raises(ValueError, match=r"\[0, 2\*\*4\)"):
        pack_uint(np.array([16]), 4)
    with pytest.raises(ValueError, match="bits"):
        pack_uint(np.array([1]), 0)


def test_fedavg_weights_by_examples_and_ledger_counts_bits():
    history = simulate([Shift(1.0, n=1), Shift(4.0, n=3)], start(), rounds=1)
    np.testing.assert_allclose(history.arrays["w"], [3.25, 3.25])
    assert history.ledger.total("up") == 2 * 2 * 32 and history.ledger.total("down") == 2 * 2 * 32
    assert history.ledger.total("up", "message") > history.ledger.total("up")
    assert history.rounds[0].fit_metrics == {"clients": 2, "examples": 4}


def test_weighted_average_checks_layout():
    with pytest.raises(MalformedMessageError, match="shape"):
        weighted_average([({"w": np.zeros(2)}, 1.0), ({"w": np.zeros(3)}, 1.0)])
    with pytest.raises(ValueError, match="items must have at least 1"):
        weighted_average([])
    with pytest.raises(TypeError, match=r"items\[0\] must be an \(arrays, weight\) pair"):
        weighted_average(["abc"])


@pytest.mark.parametrize(("reply", "match"), [
    (RuntimeError("disk on fire"), "RuntimeError: disk on fire"),
    (lambda: FitRes({"w": np.zeros(3, np.float32)}, 1), "shape"),
    (lambda: FitRes({"w": np.full(2, np.nan, np.float32)}, 1), "NaN"),
    (lambda: FitRes({"w": [0.0, 0.0]}, 1), "numpy array"),
    (lambda: FitRes({"w": np.zeros(2, np.float32)}, -1), "num_examples"),
    ({"w": np.zeros(2)}, "FitRes"),
])
def test_failing_client_is_reported_and_round_goes_on(reply, match):
    history = simulate([Shift(2.0), Broken(reply), Shift(4.0)], start(), rounds=2, on_failure="skip")
    assert history.stopped is None and len(history.rounds) == 2
    assert [(f.round, f.client) for f in history.failures] == [(1, 1), (2, 1)]
    assert match in history.failures[0].error
    np.testing.assert_allclose(history.arrays["w"], [6.0, 6.0])


def test_stop_on_failure_keeps_previous_arrays():
    class FailsInRound2(Shift):
        def fit(self, ins):
            if ins.config["round"] == 2:
                raise ValueError("bad batch")
            return super().fit(ins)

    history = simulate([Shift(1.0), FailsInRound2(1.0)], start(), rounds=3, on_failure="stop")
    assert history.stopped == "round 2: client 1 failed (ValueError: bad batch)"
    assert len(history.rounds) == 2
    np.testing.assert_allclose(history.arrays["w"], [1.0, 1.0])


def test_sampling_is_seeded():
    rng1, rng2 = np.random.default_rng(3), np.random.default_rng(3)
    assert [sample_clients(10, 3, seed=rng1) for _ in range(4)] == [sample_clients(10, 3, seed=rng2) for _ in range(4)]


@pytest.mark.parametrize("on_failure", ["skip", "stop"])
def test_a_round_where_every_client_fails_raises_with_the_first_error(on_failure):
    # regression: a run whose clients all failed used to return the untrained arrays as if it had worked
    with pytest.raises(RoundFailedError, match=r"round 1: no client .* client 0: TypeError: lr must be a real") as info:
        simulate([Broken(TypeError("lr must be a real number, got 'abc'")), Broken(RuntimeError("x"))], start(),
                 rounds=2, on_failure=on_failure)
    assert isinstance(info.value, ValueError) and isinstance(info.value.__cause__, TypeError)


def test_a_later_round_where_every_client_fails_raises_too():
    class FailsFromRound2(Shift):
        def fit(self, ins):
            if ins.config["round"] >= 2:
                raise ValueError("out of data")
            return super().fit(ins)

    with pytest.raises(RoundFailedError, match="round 2: no client .*2 of 2 failed.*client 0: ValueError: out of data"):
        simulate([FailsFromRound2(1.0), FailsFromRound2(2.0)], start(), rounds=3)


def test_zero_dimensional_arrays_keep_their_shape():
    # regression: serialize used np.ascontiguousarray, which turns shape () into (1,)
    arrays = {"scale": np.array(2.5, np.float32), "count": np.array(3, np.int64), "w": np.zeros((0, 2), np.float32)}
    back = deserialize(serialize(arrays))
    assert {k: v.shape for k, v in back.items()} == {"scale": (), "count": (), "w": (0, 2)}
    assert back["scale"].dtype == np.float32 and float(back["scale"]) == 2.5 and payload_bits(arrays) == 32 + 64

    class Scalar(Client):
        def fit(self, ins):
            assert ins.arrays["scale"].shape == ()
            return FitRes({"scale": np.asarray(ins.arrays["scale"] + 1.0, np.float32)}, 1)

    history = simulate([Scalar(), Scalar()], FedAvg({"scale": np.array(0.0, np.float32)}), rounds=2)
    assert history.failures == [] and history.arrays["scale"].shape == () and float(history.arrays["scale"]) == 2.0


def test_deserialize_rejects_what_serialize_did_not_produce():
    blob = serialize({"w": np.arange(4, dtype=np.float32)})
    assert deserialize(b"") == {}
    with pytest.raises(MalformedMessageError, match="blob"):
        deserialize(blob[:-3])
    with pytest.raises(MalformedMessageError, match="blob"):
        deserialize(b"\x05\x00\x00\x00abcde")
    with pytest.raises(TypeError, match="blob"):
        deserialize("not bytes")


def test_simulate_rejects_clients_and_strategies_of_the_wrong_type():
    with pytest.raises(TypeError, match=r"clients\[1\]"):
        simulate([Shift(1.0), object()], start(), rounds=1)
    with pytest.raises(TypeError, match="strategy"):
        simulate([Shift(1.0)], object(), rounds=1)
    with pytest.raises(ValueError, match="clients"):
        simulate([], start(), rounds=1)


def test_clients_per_round_and_shared_ledger():
    ledger = CommunicationLedger()
    history = simulate({5: Shift(1.0), 7: Shift(1.0), 9: Shift(1.0)}, start(), rounds=3, clients_per_round=2,
                       seed=0, ledger=ledger)
    assert history.ledger is ledger
    assert all(len(r.clients) == 2 and set(r.clients) <= {5, 7, 9} for r in history.rounds)
    assert set(ledger.per_round("up")) == {1, 2, 3}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"rounds": 0}, "rounds"),
    ({"rounds": 1, "on_failure": "retry"}, "on_failure"),
    ({"rounds": 1, "clients_per_round": 5}, "clients_per_round"),
])
def test_simulate_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate([Shift(1.0)], start(), **kwargs)
    with pytest.raises(ValueError, match="direction"):
        CommunicationLedger().record(1, 0, "sideways", {"w": np.zeros(1)})
