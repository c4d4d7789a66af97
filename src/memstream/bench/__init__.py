"""Benchmarks behind ``memstream bench``: LoCoMo retrieval quality and scale latency."""
