"""Benchmarks for vit-digits: raw model, served load, batch endpoint, cold start (`python -m bench`).

Imports the standard library, torch, numpy, httpx and the repository's testkit (which needs only the
service's own dependencies; matplotlib when present, for the plot), so a bare GPU machine with the
service installed can run it.
"""
