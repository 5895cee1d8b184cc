"""A server's ``/metrics`` read with Prometheus's own text-format parser (prometheus_client, a test dependency)."""

from __future__ import annotations

import urllib.request
from typing import Any

__all__ = ["Scraped", "scrape"]


class Scraped:
    """The metric families of one scrape, by family name (as the parser names them: a counter without ``_total``)."""

    def __init__(self, text: str):
        from prometheus_client.parser import text_string_to_metric_families

        self.text = text
        self.families = {family.name: family for family in text_string_to_metric_families(text)}

    def family(self, name: str) -> Any:
        return self.families[name]

    def value(self, sample_name: str, **labels: str) -> float | None:
        """The one sample named ``sample_name`` whose labels include ``labels``: its value, or None without one."""
        found = [s.value for s in self.samples(sample_name) if all(s.labels.get(k) == v for k, v in labels.items())]
        if len(found) > 1:
            raise AssertionError(f"{len(found)} samples {sample_name}{labels}")
        return found[0] if found else None

    def samples(self, sample_name: str) -> list[Any]:
        """The samples named ``sample_name`` as the server wrote it (the parser adds ``_total`` to a counter's)."""
        names = (sample_name, f"{sample_name}_total")
        return [s for family in self.families.values() for s in family.samples if s.name in names]


def scrape(metrics_url: str, timeout: float = 10.0) -> Scraped:
    """``metrics_url`` (``http://127.0.0.1:8002/metrics``) read and parsed."""
    with urllib.request.urlopen(metrics_url, timeout=timeout) as response:
        return Scraped(response.read().decode("utf-8"))
