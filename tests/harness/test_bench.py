"""``icml25 bench``: the comparison rows, the runner, the page, and every benchmark of benchmarks/ at smoke size."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest

from icml25.cli import main
from icml25.harness import bench
from icml25.harness.bench import Agreement, Comparison, compare_times
from icml25.harness.registry import catalogue

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize(("ours", "peer", "better", "verdict"), [
    (1.0, 2.0, "lower", "ahead"), (2.0, 1.0, "lower", "behind"), (1.05, 1.0, "lower", "level"),
    (2.0, 1.0, "higher", "ahead"), (0.5, 1.0, "higher", "behind"), (0.0, 0.0, "lower", "level"),
])
def test_the_verdict_follows_the_ratio_and_the_better_direction(ours, peer, better, verdict):
    row = Comparison("t", "q", ours, peer, better)
    assert row.verdict == verdict
    assert row.to_dict()["verdict"] == verdict


def test_a_zero_peer_gives_an_infinite_ratio_stored_as_none():
    row = Comparison("t", "q", 1.0, 0.0, "lower")
    assert row.ratio == math.inf and row.verdict == "behind" and row.to_dict()["ratio"] is None


def test_agreement_is_judged_against_its_tolerance():
    assert Agreement("t", "q", 1e-12, 1e-9).verdict == "agree"
    assert Agreement("t", "q", -2e-9, 1e-9).verdict == "differ"


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"ours": float("nan")}, ValueError, "ours"), ({"peer": "1"}, TypeError, "peer"),
    ({"better": "smaller"}, ValueError, "better"), ({"tolerance": 1.0}, ValueError, "tolerance"),
])
def test_bad_rows_get_one_clear_error(kwargs, error, match):
    args = {"task": "t", "quantity": "q", "ours": 1.0, "peer": 1.0, "better": "lower", **kwargs}
    with pytest.raises(error, match=match):
        Comparison(**args)


def test_compare_times_times_both_and_orders_them():
    row = compare_times("sleep", lambda: sum(range(10)), lambda: sum(range(200_000)), repeats=3)
    assert row.quantity == "time (median s)" and row.ours < row.peer and row.verdict == "ahead"


def write_benchmark(folder: Path, name: str, peers: str = '{"numpy": "NumPy"}', rows: str | None = None) -> Path:
    rows = rows or ('[Agreement("sum", "value", difference=float(np.sum([1.0, 2.0]) - 3.0), tolerance=0.0),'
                    ' Comparison("sum", "error", ours=1.0 + seed, peer=2.0, better="lower")]')
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(f'''\
        """Sums, against NumPy."""
        import numpy as np

        from icml25.harness.bench import Agreement, Comparison

        PEERS = {peers}


        def bench(size, seed):
            return {rows}
        '''), encoding="utf-8")
    return path


def test_a_record_is_stored_and_the_page_is_written(tmp_path, capsys):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    write_benchmark(folder, "wilt")
    page = tmp_path / "benchmarks.md"
    assert main(["bench", "--dir", str(folder), "--out", str(tmp_path / "r"), "--size", "smoke",
                 "--page", str(page)]) == 0
    record = json.loads((tmp_path / "r" / "bench" / "wilt.json").read_text())
    assert record["size"] == "smoke" and record["peers"]["NumPy"] and record["notes"] == "Sums, against NumPy."
    assert [r["verdict"] for r in record["rows"]] == ["agree", "ahead"]
    assert record["command"] == "icml25 bench wilt --size smoke"
    assert "wilt vs NumPy" in capsys.readouterr().out
    text = page.read_text()
    assert "| [wilt](#wilt) |" in text and "## wilt" in text and "Sums, against NumPy." in text


def test_a_missing_peer_is_named_with_its_install_command_and_the_others_still_run(tmp_path, capsys):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    write_benchmark(folder, "ultratwd", peers='{"no_such_peer_library": "Nope"}')
    write_benchmark(folder, "wilt")
    assert main(["bench", "--dir", str(folder), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "ultratwd: needs no_such_peer_library: pip install -e '.[bench]'" in err
    assert not (tmp_path / "bench" / "ultratwd.json").exists() and (tmp_path / "bench" / "wilt.json").exists()


def test_a_failing_benchmark_is_one_line_and_exit_code_1(tmp_path, capsys):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    write_benchmark(folder, "wilt", rows="[]")
    assert main(["bench", "--dir", str(folder), "--out", str(tmp_path)]) == 1
    assert "wilt: failed: TypeError" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["bench", "nope"], ["bench", "--size", "huge"], ["bench", "--seed", "-1"]])
def test_bad_bench_usage_exits_2(args, tmp_path, capsys):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    write_benchmark(folder, "wilt")
    assert main([*args, "--dir", str(folder), "--out", str(tmp_path)]) == 2
    assert "icml25: error:" in capsys.readouterr().err


def test_the_page_skips_a_foreign_file_with_a_warning(tmp_path, capsys):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.json").write_text("[1, 2]")
    assert bench.load_records(tmp_path, warn=print) == []
    assert "not an icml25 benchmark record" in capsys.readouterr().out


def test_every_benchmark_is_named_after_a_paper():
    assert bench.find(BENCHMARKS), "benchmarks/ has no benchmark"
    assert set(bench.find(BENCHMARKS)) <= set(catalogue())


@pytest.mark.parametrize("pid", sorted(bench.find(BENCHMARKS)))
def test_every_benchmark_runs_at_smoke_size_and_agrees_with_its_peer(pid):
    record = bench.run_benchmark(BENCHMARKS / f"{pid}.py", size="smoke")
    assert record["rows"]
    differ = [r for r in record["rows"] if r["verdict"] == "differ"]
    assert not differ, differ


def test_the_benchmarks_page_is_generated_from_the_committed_records():
    root = BENCHMARKS.parent
    records = bench.load_records(root / "results")
    assert {r["paper"] for r in records} == set(bench.find(BENCHMARKS)), "a benchmark without a committed record"
    assert all(r["size"] == "full" for r in records)
    assert (root / "docs" / "benchmarks.md").read_text(encoding="utf-8") == bench.page_markdown(records), \
        "docs/benchmarks.md is stale: icml25 bench --page docs/benchmarks.md"


def test_compare_times_reads_the_given_clock():
    ticks = iter(range(100))
    row = compare_times("t", lambda: None, lambda: None, repeats=2, clock=lambda: float(next(ticks)))
    assert row.ours == row.peer == 1.0


def test_page_only_writes_the_page_from_stored_records_and_runs_nothing(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    write_benchmark(folder, "wilt", rows='[Comparison("|u| <= 2", "q", ours=1.0, peer=2.0, better="lower")]')
    assert main(["bench", "--dir", str(folder), "--out", str(tmp_path)]) == 0
    (folder / "wilt.py").write_text("raise RuntimeError('must not run')")
    page = tmp_path / "page.md"
    assert main(["bench", "--dir", str(folder), "--out", str(tmp_path), "--page", str(page), "--page-only"]) == 0
    assert "| \\|u\\| <= 2 | q (lower is better) | 1 | 2 | 0.5 | **ahead** |" in page.read_text()
    assert main(["bench", "wilt", "--out", str(tmp_path), "--page", str(page), "--page-only"]) == 2
