"""Latent dynamical systems of neural data (needs the ``torch`` extra)."""

from icml25.dynamics.issm import (
    ISSM,
    InterventionalLDS,
    LinearEmission,
    LSTMRecognition,
    MLPEmission,
    align_latents,
    aligned_r2,
    eigen_error,
)

__all__ = [
    "ISSM",
    "InterventionalLDS",
    "LSTMRecognition",
    "LinearEmission",
    "MLPEmission",
    "align_latents",
    "aligned_r2",
    "eigen_error",
]
