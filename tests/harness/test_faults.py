"""Faults: no finished result is lost or corrupted, whatever goes wrong.

A reproduction that raises, one that hangs past the timeout, a worker killed mid-run, Ctrl-C of
the CLI, a full disk or unwritable results folder, and corrupt or foreign JSON in the results folder.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml25 import cli
from icml25.harness import store
from icml25.harness.backends import run_many
from icml25.harness.runner import run_paper
from icml25.harness.store import load_result, result_path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # spawned workers inherit sys.path and import the fakes by name
    sys.path.insert(0, str(HERE))
fakes = importlib.import_module("harness_fakes")


def use_fakes(monkeypatch, entries):
    by_id = {e.id: e for e in entries}
    monkeypatch.setattr(cli, "lookup", lambda pid: by_id[pid])
    monkeypatch.setattr("icml25.harness.report.catalogue", lambda: by_id)


def stored_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def no_temporary_files(root: Path) -> bool:
    return not [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "zombie" in status


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_reproduction_that_raises_fails_alone(jobs, tmp_path):
    entries = [fakes.entry(fakes.boom, "fb"), fakes.entry(fakes.good, "fa")]
    outcomes = run_many(entries, "smoke", root=tmp_path, jobs=jobs)
    assert outcomes[0].status == "failed" and "RuntimeError: boom" in outcomes[0].error
    assert outcomes[1].status == "done" and load_result(result_path(tmp_path, "fa", "smoke")) == outcomes[1].record
    assert not result_path(tmp_path, "fb", "smoke").exists() and no_temporary_files(tmp_path)


def test_a_hang_past_the_timeout_is_killed_and_the_others_land(tmp_path, monkeypatch):
    monkeypatch.setenv(fakes.MARKER_ENV, str(tmp_path))
    entries = [fakes.entry(fakes.hang, "fh"), fakes.entry(fakes.good, "fa"), fakes.entry(fakes.good, "fc")]
    start = time.monotonic()
    outcomes = run_many(entries, "smoke", root=tmp_path / "results", jobs=2, timeout=2.5)
    assert time.monotonic() - start < 60
    assert outcomes[0].status == "failed" and outcomes[0].error.startswith("timed out after 2.5 s")
    assert outcomes[0].seconds >= 2.5
    assert [o.status for o in outcomes[1:]] == ["done", "done"]
    assert gone(int((tmp_path / "hang.pid").read_text()))
    assert not result_path(tmp_path / "results", "fh", "smoke").exists()


def test_a_timeout_also_stops_the_processes_the_reproduction_started(tmp_path, monkeypatch):
    monkeypatch.setenv(fakes.MARKER_ENV, str(tmp_path))
    outcomes = run_many([fakes.entry(fakes.hang_in_pool, "fp")], "smoke", root=tmp_path / "results", timeout=20)
    assert outcomes[0].status == "failed" and "timed out after 20 s" in outcomes[0].error
    pids = [int((tmp_path / f"pool{i}.pid").read_text()) for i in range(2)]
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(gone(pid) for pid in pids)


def test_jobs_1_with_a_timeout_runs_in_a_worker(tmp_path, monkeypatch):
    monkeypatch.setenv(fakes.MARKER_ENV, str(tmp_path))
    outcomes = run_many([fakes.entry(fakes.hang, "fh")], "smoke", root=tmp_path / "results", timeout=2)
    assert outcomes[0].status == "failed" and "timed out after 2 s" in outcomes[0].error


def test_a_killed_worker_is_reported_and_the_others_go_on(tmp_path):
    entries = [fakes.entry(fakes.kill_self, "fk"), fakes.entry(fakes.good, "fa"), fakes.entry(fakes.good, "fc")]
    outcomes = run_many(entries, "smoke", root=tmp_path, jobs=2)
    assert outcomes[0].status == "failed" and "killed by SIGKILL" in outcomes[0].error
    assert [o.status for o in outcomes[1:]] == ["done", "done"]
    assert not result_path(tmp_path, "fk", "smoke").exists() and no_temporary_files(tmp_path)


# A shell that starts a job in the background (as CI runners may) makes its children ignore SIGINT;
# the script restores Python's default handler, as a user's terminal has it.
CTRL_C_SCRIPT = """
import signal
import sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {here!r})
import harness_fakes as fakes
from icml25 import cli
entries = {{e.id: e for e in [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.hang, "fh")]}}
cli.lookup = entries.__getitem__
sys.exit(cli.main(["reproduce", "fa", "fh", "--scale", "smoke", "--out", {out!r}] + {extra!r}))
"""


@pytest.mark.parametrize("extra", [["--jobs", "2"], []], ids=["workers", "in-process"])
def test_ctrl_c_exits_130_with_finished_results_intact(extra, tmp_path):
    out = tmp_path / "results"
    script = CTRL_C_SCRIPT.format(here=str(HERE), out=str(out), extra=extra)
    env = dict(os.environ, **{fakes.MARKER_ENV: str(tmp_path)})
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    done, pid_file = result_path(out, "fa", "smoke"), tmp_path / "hang.pid"
    try:
        deadline = time.monotonic() + 90
        while not (done.is_file() and pid_file.is_file()) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert done.is_file() and pid_file.is_file(), proc.communicate(timeout=10)
        before = stored_files(out)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        hang_left = pid_file.is_file() and not gone(int(pid_file.read_text()))
        if hang_left:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "interrupted; finished results are stored" in err
    assert stored_files(out) == before and no_temporary_files(out)
    assert load_result(done)["paper"] == "fa" and not result_path(out, "fh", "smoke").exists()
    assert not hang_left


def test_a_full_disk_is_one_line_and_earlier_results_are_intact(tmp_path, monkeypatch, capsys):
    entries = [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.good, "fc")]
    use_fakes(monkeypatch, entries)
    run_paper(entries[0], "smoke", root=tmp_path)
    before = stored_files(tmp_path)

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store.os, "fsync", no_space)
    code = cli.main(["reproduce", "fa", "fc", "--scale", "smoke", "--force", "--out", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("icml25: error: cannot write ")
    assert "No space left on device; results stored earlier are intact" in err[0]
    assert stored_files(tmp_path) == before and no_temporary_files(tmp_path)


def test_a_full_disk_stops_worker_runs_too(tmp_path, monkeypatch):
    monkeypatch.setattr(store.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space")))
    entries = [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.good, "fc")]
    with pytest.raises(store.StoreError, match="No space"):
        run_many(entries, "smoke", root=tmp_path, jobs=2)
    assert stored_files(tmp_path) == {}


@pytest.mark.parametrize("how", ["under-a-file", "read-only"])
def test_an_unwritable_results_folder_is_one_line(how, tmp_path, monkeypatch, capsys):
    use_fakes(monkeypatch, [fakes.entry(fakes.good, "fa")])
    if how == "under-a-file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "results"
    else:
        if os.geteuid() == 0:
            pytest.skip("chmod does not stop root from writing")
        out = tmp_path / "results"
        out.mkdir()
        out.chmod(0o555)
    try:
        code = cli.main(["reproduce", "fa", "--scale", "smoke", "--out", str(out)])
    finally:
        if out.exists():
            out.chmod(0o755)
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"icml25: error: cannot write {out}")


def test_corrupt_and_foreign_json_are_reported_and_skipped(tmp_path, monkeypatch, capsys):
    entries = [fakes.entry(fakes.good, "fa"), fakes.entry(fakes.good, "fc")]
    use_fakes(monkeypatch, entries)
    run_paper(entries[1], "quick", root=tmp_path)
    corrupt = result_path(tmp_path, "fa", "smoke")
    corrupt.parent.mkdir(parents=True)
    corrupt.write_text('{"paper": "fa", "sca')
    foreign = result_path(tmp_path, "fa", "quick")
    foreign.write_text(json.dumps({"hello": "world"}))
    stray = tmp_path / "notes" / "mine.json"
    stray.parent.mkdir()
    stray.write_text("[]")
    assert cli.main(["report", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"icml25: warning: {corrupt}: not a readable JSON file" in err
    assert f"icml25: warning: {foreign}: JSON that is not an icml25 result record; skipped" in err
    assert f"icml25: warning: {stray}: not the result of a registered paper" in err
    assert "## fc: fake fc" in (tmp_path / "report.md").read_text()
    # resume logic: the corrupt file is reported, the paper reruns and its result replaces the file
    assert cli.main(["reproduce", "fa", "fc", "--scale", "smoke", "--out", str(tmp_path)]) == 0
    assert f"{corrupt}: not a readable JSON file" in capsys.readouterr().err
    assert load_result(corrupt)["paper"] == "fa"
    assert json.loads(foreign.read_text()) == {"hello": "world"} and stray.read_text() == "[]"
