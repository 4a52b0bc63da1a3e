"""Benchmarks (not tests): each script measures millpond against its peers; see its docstring."""
