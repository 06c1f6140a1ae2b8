"""The README's paper table is generated, and every docs page's example runs."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest

from icml25.harness.registry import catalogue
from icml25.harness.report import catalogue_markdown, readme_headline

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- papers:begin -->", "<!-- papers:end -->"
IMPLEMENTED = [e.id for e in catalogue().values() if e.implemented]


def test_readme_table_matches_registry():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip() + "\n"
    assert table == catalogue_markdown(catalogue().values()), (
        "README.md's table drifted: run `python3 tasks.py readme`")
    assert readme.splitlines()[0] + "\n" == readme_headline(catalogue().values()), (
        "README.md's first line drifted: run `python3 tasks.py readme`")


def test_readme_commands_work_in_a_new_shell():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/icml25 " in readme and "pip install icml25[" not in readme
    assert "pip install -e '.[ray]'" in readme
    assert "brief" not in readme.lower()


def test_readme_opens_with_the_two_setup_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```(?:bash|sh)\n(.*?)```", readme, re.S).group(1)
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert commands == ["python3 tasks.py reproduce", "python3 tasks.py test"]


@pytest.mark.parametrize("pid", IMPLEMENTED)
def test_every_implemented_paper_has_a_docs_page(pid):
    page = ROOT / "docs" / "papers" / f"{pid}.md"
    assert page.is_file(), f"missing {page}"
    assert f"icml25 reproduce {pid}" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("pid", IMPLEMENTED)
def test_docs_example_runs(pid, tmp_path, monkeypatch):
    text = (ROOT / "docs" / "papers" / f"{pid}.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, f"docs/papers/{pid}.md has no python example"
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), f"docs/papers/{pid}.md", "exec"), {"__name__": "__docs__"})
