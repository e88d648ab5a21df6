"""Reading `GET /metrics` as Prometheus does: the text parsed with prometheus-client's
own parser, every sample kept by name and labels."""

from __future__ import annotations

import re

import attrs
import httpx
from prometheus_client.parser import text_string_to_metric_families

from ._service import CLIENT_TLS

# What an id looks like (the contract's prefixes followed by base62): no label may hold one.
ID_LIKE = re.compile(
    r"(cs_test_|sub_test_|clock_test_|re_test_|txn_test_|evt_|mer_|whd_|we_|key_|req_|fp_test_"
    r"|whsec_)[0-9A-Za-z]{10,}"  # an id's random part (a route's `<key_id>` is not one)
)


@attrs.frozen
class Scrape:
    """One answer of `/metrics`: each sample's value by (name, labels)."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    types: dict[str, str]  # metric family name -> counter, gauge, histogram

    def value(self, name: str, **labels: str) -> float:
        """The sample `name` with exactly `labels`; 0 when there is none (never counted)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)

    def label_values(self) -> set[str]:
        return {value for _, labels in self.samples for _, value in labels}


def parse_metrics(text: str) -> Scrape:
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"{key} appears twice"
            samples[key] = sample.value
    return Scrape(samples=samples, types=types)


async def scrape(base_url: str, token: str | None = None) -> Scrape:
    """`GET /metrics` on a connection of its own (so several workers may answer in turn)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=30, verify=CLIENT_TLS) as client:
        answer = await client.get(base_url + "/metrics", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse_metrics(answer.text)
