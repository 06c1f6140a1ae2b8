"""icml25.harness.parallel.run_jobs: seeded jobs over single-threaded worker processes."""

from __future__ import annotations

import operator

import pytest

from icml25.harness.parallel import run_jobs


@pytest.mark.parametrize("workers", [1, 2])
def test_results_come_back_in_job_order_with_progress(workers):
    jobs = [(i, 10 * i) for i in range(5)]
    seen = []
    out = run_jobs(operator.add, jobs, workers, progress=lambda f, m: seen.append((f, m)),
                   describe=lambda job: f"job {job[0]}")
    assert out == [11 * i for i in range(5)]
    assert sorted(f for f, _ in seen) == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert sorted(m for _, m in seen) == [f"job {i}" for i in range(5)]


def test_worker_processes_run_single_threaded():
    torch = pytest.importorskip("torch")
    assert run_jobs(torch.get_num_threads, [(), ()], 2) == [1, 1]


def test_a_failing_job_raises_its_error():
    with pytest.raises(ZeroDivisionError):
        run_jobs(operator.truediv, [(1, 1), (1, 0)], 2)


@pytest.mark.parametrize(("workers", "exc"), [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError),
                                             ("2", TypeError)])
def test_bad_worker_count(workers, exc):
    with pytest.raises(exc, match="workers must be an integer >= 1, got"):
        run_jobs(operator.add, [(1, 2)], workers)
