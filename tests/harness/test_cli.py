"""The command line: exit codes, one-line errors, listing formats."""

from __future__ import annotations

import json

import pytest

from icml25.cli import main
from icml25.harness.registry import catalogue


def test_unknown_paper_is_usage_error(capsys):
    assert main(["reproduce", "nosuchpaper"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown paper id 'nosuchpaper'" in err[0]


def test_unknown_scale_is_usage_error(capsys):
    assert main(["reproduce", "--scale", "huge"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice: 'huge'" in err[0]


@pytest.mark.parametrize("args", [["reproduce", "--seeds", "0"], ["frobnicate"], ["list", "--field", "nope"],
                                  ["show", "ultratw"]])
def test_other_bad_usage_exits_2(args, capsys):
    assert main(args) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_list_json_covers_catalogue(capsys):
    assert main(["list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 38 and all(r["abstract"] for r in rows)


def test_list_field_filter(capsys):
    assert main(["list", "--field", "transport", "--format", "json"]) == 0
    assert {r["id"] for r in json.loads(capsys.readouterr().out)} == {"ultratwd", "wilt"}


def test_show_every_paper_and_report(tmp_path, capsys):
    for entry in catalogue().values():
        assert main(["show", entry.id, "--out", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert entry.abstract.split()[0] in out
        assert ("planned" in out) == (entry.status == "planned")
    assert main(["report", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.html").is_file() and (tmp_path / "report.md").is_file()


def test_gsm_infinity_subcommand_is_registered(tmp_path, capsys):
    out = tmp_path / "bench.jsonl"
    assert main(["gsm-infinity", "generate", "--ops", "2,3", "--per-op", "2", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 4
    assert main(["gsm-infinity", "validate", str(out)]) == 0
    assert main(["gsm-infinity", "generate", "--ops", "x", "--out", str(tmp_path / "bad.jsonl")]) == 2
    assert "expected ints" in capsys.readouterr().err
    assert not (tmp_path / "bad.jsonl").exists()
