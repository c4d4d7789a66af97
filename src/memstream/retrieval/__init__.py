"""Retrieval: candidates from the indexes, signals, normalisation, weighted score, packing."""
