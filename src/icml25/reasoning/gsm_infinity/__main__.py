"""``python -m icml25.reasoning.gsm_infinity generate --subset symbolic --ops 2,5 --out bench.jsonl``."""

import sys

from icml25.reasoning.gsm_infinity.cli import run

sys.exit(run())
