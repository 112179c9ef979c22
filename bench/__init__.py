"""Benchmarks (`make bench`): hot paths measured here, never in timed tests."""
