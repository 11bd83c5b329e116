"""Helpers for the tests and benchmarks (not shipped in the package)."""
