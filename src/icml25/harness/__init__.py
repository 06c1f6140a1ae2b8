"""The reproduction harness: contract, registry, runner, result store and report."""

from icml25.harness.contract import SCALES, Claim, Paper, Result, Run

__all__ = ["SCALES", "Claim", "Paper", "Result", "Run"]
