"""The service's /metrics, parsed by prometheus_client's own text parser."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

# (sample name, its labels) -> value; counters' samples carry the `_total` suffix.
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(base_url: str, timeout: float = 10.0) -> Samples:
    response = httpx.get(base_url + "/metrics", timeout=timeout)
    response.raise_for_status()
    return parse(response.text)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples called `name` (or `name_total`) whose labels include `labels` (0.0 if none)."""
    names = {name, name + "_total"}
    want = set(labels.items())
    return sum(value for (n, have), value in samples.items() if n in names and want <= have)
