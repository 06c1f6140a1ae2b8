"""EPD serving: the tiny LMM's phases, the real multi-process system (three modes, MM cache, KV capacity, crashes,
no surviving process), the OpenAI-compatible server with the real ``openai`` client, metrics and the simulator."""

from __future__ import annotations

import base64
import io
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from icml25.serving import (
    EncoderConfig,
    LatencyModel,
    Limits,
    LMConfig,
    Request,
    RequestMetrics,
    RoleSwitcher,
    SamplingParams,
    ServingSystem,
    SimConfig,
    SimRequest,
    TinyLMM,
    allocate,
    make_trace,
    simulate,
    summarize,
)
from icml25.serving.model import grow_cache
from icml25.serving.workers import DecodeBatch

SMALL = {"enc_cfg": EncoderConfig(image_size=32, patch=8, dim=64, layers=2, heads=2),
         "llm_cfg": LMConfig(vocab=256, dim=64, layers=2, heads=2, max_len=512)}
ROOT = Path(__file__).resolve().parents[2]


def _model() -> TinyLMM:
    return TinyLMM(SMALL["enc_cfg"], SMALL["llm_cfg"], seed=0)


def _trace(n=5, seed=0, rate=20.0, **kw) -> list[Request]:
    kw = {"images": (0, 3), "prompt": (4, 12), "output": (3, 6), "image_size": 32, "vocab": 256, **kw}
    return make_trace(n, rate, seed=seed, **kw)


def _reference(model: TinyLMM, trace: list[Request]) -> list[list[int]]:
    return [model.generate(torch.tensor(r.prompt), None if r.images is None else torch.from_numpy(r.images),
                           r.sampling.max_new_tokens) for r in trace]


def _children(pid: int) -> set[int]:
    """Descendant pids of ``pid`` from /proc, minus zombies."""
    out, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == parent and stat[0] != "Z":
                out.add(int(entry))
                todo.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def epd():
    """One EPD system (2 E, 1 P, 1 D) for the tests that only submit requests; stopped at the end."""
    system = ServingSystem("epd", n_encode=2, **SMALL, limits=Limits(kv_capacity_tokens=256, max_images_per_request=4))
    with system:
        yield system
    assert system.alive_pids() == [] and not any(_alive(p) for p in system.pids.values())


# ------------------------------------------------------------------ the model
def test_model_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    a, b = _model(), _model()
    assert torch.equal(state, torch.get_rng_state())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert a.dtype == torch.float64 and a.to(torch.float32).dtype == torch.float32


def test_batched_decode_equals_one_request_at_a_time():
    model = _model()
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 256, (n,), generator=gen) for n in (3, 9, 5)]
    ref = [model.generate(p, None, 6) for p in prompts]
    batch = DecodeBatch(model, max_batch=2)  # the third request joins when one leaves: continuous batching
    out = {}
    for i, p in enumerate(prompts):
        logits, kv = model.prefill(p)
        out[i] = [int(logits.argmax())]
        batch.add(i, kv, out[i][0], 6 if i != 1 else 3, None)
    while len(batch):
        for rid, token, _ in batch.step()[0]:
            out[rid].append(token)
    assert out[0] == ref[0] and out[2] == ref[2] and out[1] == ref[1][:3]


def test_prefill_with_images_and_grow_cache():
    model = _model()
    images = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    mm = model.encode(images)
    assert mm.shape == (2, 16, 64)
    logits, kv = model.prefill(torch.tensor([1, 2, 3]), mm.flatten(0, 1))
    assert logits.shape == (256,) and kv.shape == (2, 2, 2, 35, 32)
    assert torch.equal(grow_cache(kv, 40)[:, :, :, :35], kv)


def test_model_rejects_bad_input():
    model = _model()
    with pytest.raises(ValueError, match="images"):
        model.encode(torch.zeros(1, 3, 16, 16))
    with pytest.raises(ValueError, match="max_len"):
        model.prefill(torch.zeros(600, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one"):
        model.prefill(torch.zeros(0, dtype=torch.long))
    with pytest.raises(TypeError, match="enc_cfg"):
        TinyLMM(enc_cfg="big")
    with pytest.raises(ValueError, match="multiple of patch"):
        EncoderConfig(image_size=30, patch=8)


# ------------------------------------------------------------------ requests, workloads, metrics
def test_request_validation():
    with pytest.raises(ValueError, match="empty prompt and no image"):
        Request("a", [])
    with pytest.raises(ValueError, match="images"):
        Request("a", [1], np.zeros((2, 32, 32), np.float32))
    with pytest.raises(TypeError, match="max_new_tokens"):
        SamplingParams(max_new_tokens=2.5)
    assert Request("a", [], np.zeros((1, 3, 32, 32), np.float32)).n_images == 1


def test_make_trace_is_deterministic_and_poisson():
    a, b = _trace(50, seed=3), _trace(50, seed=3)
    assert [r.prompt for r in a] == [r.prompt for r in b] and [r.arrival for r in a] == [r.arrival for r in b]
    gaps = np.diff([r.arrival for r in make_trace(4000, 10.0, images=(0, 0), prompt=(1, 2), seed=0)])
    assert abs(gaps.mean() - 0.1) < 0.01
    assert all(r.arrival == 0 for r in make_trace(3, math.inf, images=(0, 1), seed=0))
    with pytest.raises(ValueError, match="rate"):
        make_trace(3, -1.0)
    with pytest.raises(ValueError, match="both"):
        make_trace(3, 1.0, images=(0, 0), prompt=(0, 0))


def test_summarize_follows_the_vllm_definitions():
    m1 = RequestMetrics("a", 0.0, tokens=[1, 2, 3], token_times=[1.0, 1.5, 2.0], finish=2.0)
    m2 = RequestMetrics("b", 0.0, tokens=[1, 2], token_times=[3.0, 5.0], finish=5.0)
    m3 = RequestMetrics("c", 0.0, error="rejected", finish=0.0)
    assert m1.ttft == 1.0 and m1.tpot == 0.5 and m1.itl == [0.5, 0.5]
    s = summarize([m1, m2, m3], slo_ttft=2.0, slo_tpot=1.0)
    assert s["completed"] == 2 and s["failed"] == 1 and s["mean_ttft"] == 2.0 and s["mean_tpot"] == 1.25
    assert s["slo_attainment"] == pytest.approx(1 / 3) and s["goodput"] == pytest.approx(1 / 5)
    with pytest.raises(ValueError, match="slo_ttft"):
        summarize([m1], slo_ttft=0)


# ------------------------------------------------------------------ simulator and allocator
def test_simulator_single_request_is_hand_computable():
    lat = LatencyModel(e0=0.1, e1=0.2, p0=0.05, p1=0.001, d0=0.01, d1=0.001, bandwidth=1e6, mm_bytes_per_image=1e5,
                       kv_bytes_per_token=100)
    req = SimRequest(0.0, 2, 10, 4)
    m = simulate(SimConfig("epd", tokens_per_image=5), [req], lat)[0]
    ttft = 0.1 + 0.2 * 2 + 0.2 + 0.05 + 0.001 * 20  # encode 2 images, MM transfer 2e5 B, prefill 20 tokens
    assert m.ttft == pytest.approx(ttft) and m.tpot == pytest.approx(0.011 + 20 * 100 / 1e6 / 3)
    agg = simulate(SimConfig("aggregated", tokens_per_image=5), [req], lat)[0]
    assert agg.ttft == pytest.approx(0.5 + 0.07) and agg.tpot == pytest.approx(0.011)


def test_aggregated_prefill_blocks_decode_in_the_simulator():
    lat = LatencyModel(e1=1.0, p1=0.001, d0=0.01)
    trace = [SimRequest(0.0, 0, 10, 50), SimRequest(0.1, 4, 10, 2)]
    agg = simulate(SimConfig("aggregated", tokens_per_image=1), trace, lat)
    epd = simulate(SimConfig("epd", tokens_per_image=1), trace, lat)
    assert agg[0].tpot > 3 * epd[0].tpot


def test_latency_model_fit_recovers_coefficients():
    rng = np.random.default_rng(0)
    prof = ([{"kind": "encode", "n": n, "seconds": 0.01 + 0.02 * n} for n in rng.integers(1, 9, 20)]
            + [{"kind": "prefill", "n": t, "seconds": 0.002 + 1e-4 * t + 1e-7 * t * t}
               for t in rng.integers(10, 900, 20)]
            + [{"kind": "decode", "batch": b, "ctx": c, "seconds": 0.001 + 2e-4 * b + 1e-6 * c}
               for b, c in zip(rng.integers(1, 9, 20), rng.integers(10, 2000, 20), strict=True)]
            + [{"kind": "transfer", "bytes": 1e6, "seconds": 1e-3}])
    lat = LatencyModel.fit(prof)
    assert lat.e1 == pytest.approx(0.02) and lat.p2 == pytest.approx(1e-7) and lat.d2 == pytest.approx(1e-6)
    assert lat.bandwidth == pytest.approx(1e9)
    with pytest.raises(ValueError, match="profile"):
        LatencyModel.fit([])


def test_allocator_and_role_switching():
    lat = LatencyModel.gpu_preset()
    trace = make_trace(40, 6.0, images=(6, 10), image_size=1, seed=0)
    alloc = allocate(6, trace, (3.0, 0.05), lat, base=SimConfig(tokens_per_image=576), batch_grid=(8,))
    c = alloc.config
    assert c.n_encode + c.n_prefill + c.n_decode == 6 and 0 <= alloc.slo_attainment <= 1
    with pytest.raises(ValueError, match="budget"):
        allocate(2, trace, (3.0, 0.05), lat)
    heavy = [SimRequest(0.05 * i, 10, 10, 16) for i in range(60)]
    light = [SimRequest(3 + 0.05 * i, 0, 4000, 16) for i in range(60)]
    switcher = RoleSwitcher(threshold=0.2, window=0.25)
    cfg = SimConfig("epd", 4, 2, 2, tokens_per_image=576)
    simulate(cfg, heavy + light, lat, switcher)
    assert any(to == "P" for _, _, to in switcher.switches)


# ------------------------------------------------------------------ the real system
def test_three_modes_give_the_reference_greedy_tokens_and_leave_no_process():
    trace = _trace(6, seed=1)
    ref = _reference(_model(), trace)
    for mode in ("aggregated", "pd", "epd"):
        system = ServingSystem(mode, **SMALL)
        with system:
            pids = list(system.pids.values())
            assert all(_alive(p) for p in pids)
            out = system.run_trace(trace, timeout=120)
        assert [m.tokens for m in out] == ref, mode
        assert all(m.ok and m.ttft > 0 for m in out)
        assert not any(_alive(p) for p in pids) and system.alive_pids() == []
    assert not _children(os.getpid()) - {p for p in _children(os.getpid()) if "resource_tracker" in
                                        Path(f"/proc/{p}/cmdline").read_text(errors="replace")}


def test_mm_cache_reuses_repeated_images_and_text_only_bypasses_encode(epd):
    img = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    before = len(epd.profile)
    out = epd.run_trace([Request("c1", [1, 2], img, SamplingParams(3)), Request("c2", [3], np.concatenate([img, img]),
                                                                                SamplingParams(3), arrival=0.2),
                         Request("c3", [4, 5, 6], None, SamplingParams(3), arrival=0.3)])
    assert all(m.ok for m in out)
    assert sum(p["n"] for p in epd.profile[before:] if p["kind"] == "encode") == 1
    assert out[1].cached_images == 2 and out[2].encode_start is None
    model = _model()
    assert out[1].tokens == model.generate(torch.tensor([3]), torch.from_numpy(np.concatenate([img, img])), 3)


def test_rejections_and_duplicate_ids(epd):
    rng = np.random.default_rng(1)
    many = epd.submit(Request("r1", [1], rng.standard_normal((5, 3, 32, 32)).astype(np.float32)))
    long = epd.submit(Request("r2", list(range(250)), None, SamplingParams(10)))
    assert many.error.startswith("rejected") and long.error.startswith("rejected")
    slow = epd.submit(Request("r3", [1, 2], None, SamplingParams(40)))
    with pytest.raises(ValueError, match="duplicate"):
        epd.submit(Request("r3", [1], None))
    assert epd.run_trace([Request("r4", [1, 2, 3], None, SamplingParams(2))])[0].ok
    deadline = time.monotonic() + 60
    while slow.finish is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert slow.ok


def test_kv_capacity_queues_requests_instead_of_crashing():
    trace = [Request(f"q{i}", list(range(30)), None, SamplingParams(20), arrival=0.0) for i in range(4)]
    with ServingSystem("aggregated", **SMALL, limits=Limits(kv_capacity_tokens=60)) as system:
        out = system.run_trace(trace, timeout=120)
    assert all(m.ok for m in out)
    spans = sorted((m.prefill_start, m.finish) for m in out)  # 50 tokens each: only one fits at a time
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))


def test_a_killed_worker_fails_in_flight_requests_and_shutdown_leaves_no_process():
    trace = _trace(8, seed=2, rate=4.0, output=(40, 60))
    system = ServingSystem("pd", **SMALL)
    with system:
        pids = dict(system.pids)
        first = system.submit(trace[0])
        while not first.tokens:
            time.sleep(0.01)
        os.kill(pids["D0"], signal.SIGKILL)
        out = system.run_trace(trace[1:], timeout=60)
        assert first.error and "D0" in first.error
        assert all(m.error for m in out)
        with pytest.raises(RuntimeError, match="failed"):
            system.submit(Request("late", [1]))
    assert not any(_alive(p) for p in pids.values())


# ------------------------------------------------------------------ HTTP: the real openai client
def _png_data_url() -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def test_openai_client_against_our_server(epd):
    openai = pytest.importorskip("openai")
    from icml25.serving import running_server

    with running_server(epd) as base_url:
        assert base_url.startswith("http://127.0.0.1:")
        client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=60)
        assert [m.id for m in client.models.list().data] == ["icml25-tiny-lmm"]
        messages = [{"role": "user", "content": [{"type": "text", "text": "describe"},
                                                  {"type": "image_url", "image_url": {"url": _png_data_url()}}]}]
        full = client.chat.completions.create(model="icml25-tiny-lmm", messages=messages, max_tokens=5)
        assert full.choices[0].finish_reason == "length" and full.usage.completion_tokens == 5
        chunks = list(client.chat.completions.create(model="icml25-tiny-lmm", messages=messages, max_tokens=5,
                                                     stream=True))
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert streamed == full.choices[0].message.content and streamed.count("<") == 5
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="icml25-tiny-lmm", messages=[], max_tokens=2)
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    import socket

    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_icml25_serve_command_starts_and_stops_cleanly():
    openai = pytest.importorskip("openai")
    from icml25.serving.server import free_port

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "icml25.cli", "serve", "--mode", "aggregated", "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=30)
        deadline = time.monotonic() + 120
        while True:
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()
                time.sleep(0.2)
        workers = _children(proc.pid)
        assert workers
        reply = client.chat.completions.create(model="icml25-tiny-lmm", max_tokens=3,
                                               messages=[{"role": "user", "content": "hi"}])
        assert reply.usage.completion_tokens == 3
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert not any(_alive(p) for p in workers)
