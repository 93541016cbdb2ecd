"""Benchmarks of st-static: scripts that measure and print, run as ``python -m benchmarks.NAME``."""
