"""icml25: library code and honest small-scale reproductions of 38 ICML 2025 papers."""

__version__ = "0.1.0"
