"""Benchmarks (`make bench`): each runs beside its baseline in the same process run."""
