"""Benchmarks for vit-digits: raw model, served load, batch endpoint, cold start (`python -m bench`).

Imports only the standard library, torch, numpy and httpx (matplotlib when present, for the plot), so a
bare GPU machine with the service's own dependencies can run it.
"""
