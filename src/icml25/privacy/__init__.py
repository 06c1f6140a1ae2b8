"""Differential privacy: noise calibration and lossless multiple release."""
