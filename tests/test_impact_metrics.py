"""GET /metrics on the HTTP server: the impact totals in Prometheus text format (a valid page, parsed by
prometheus_client's own parser), per tenant, behind the same bearer token as /mcp (401 without)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_http import ALPHA, BETA, call, client

from http_harness import free_port, start_server, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.xdist_group("impact_metrics")]
ERROR = "ModuleNotFoundError: No module named 'metrics_alpha_module'"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp_path = tmp_path_factory.mktemp("metrics")
    port = free_port()
    proc = start_server(f"sqlite:///{tmp_path}/http.db", f"{ALPHA}=alpha,{BETA}=beta", port, tmp_path / "err.log")
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


async def _alpha_session(url: str) -> None:
    async with client(url + "/mcp", ALPHA) as a:
        _, rec, _ = await call(a, "vlk_record_state", raw_log=ERROR, session_id="one")
        await call(a, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"]], raw_log_excerpt=ERROR,
                   learning="install metrics_alpha_module with pip", session_id="one", scope="project")
        await call(a, "vlk_fetch_context", session_id="two")  # the lesson carried into session two
        await call(a, "vlk_record_state", raw_log=ERROR, session_id="two")  # recalled, and met again
        await call(a, "vlk_record_state", raw_log=ERROR + " ", session_id="two")  # the same error again: a repeat


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_need_the_token_and_show_each_tenant_its_own_totals(server: str) -> None:
    anyio.run(_alpha_session, server)
    assert httpx2.get(server + "/metrics").status_code == 401
    assert httpx2.get(server + "/metrics", headers={"authorization": "Bearer wrong-token-0123456789"}
                      ).status_code == 401
    alpha = httpx2.get(server + "/metrics", headers={"authorization": f"Bearer {ALPHA}"})
    assert alpha.status_code == 200 and alpha.headers["content-type"].startswith("text/plain; version=")
    found = _samples(alpha.text)
    assert found[("vlk_memact_interventions_total", (("kind", "recall"), ("tenant", "alpha")))] == 2  # each record recalls it
    assert found[("vlk_memact_interventions_total", (("kind", "carried"), ("tenant", "alpha")))] == 1
    assert found[("vlk_memact_interventions_total", (("kind", "repeat"), ("tenant", "alpha")))] == 1
    assert found[("vlk_memact_carried_facts_total", (("outcome", "met_again"), ("tenant", "alpha")))] == 1
    assert found[("vlk_memact_chars_injected_total", (("tenant", "alpha"),))] > 0
    assert found[("vlk_memact_sessions_intervened", (("tenant", "alpha"),))] == 1
    assert "# TYPE vlk_memact_fixes_total counter" in alpha.text
    beta = httpx2.get(server + "/metrics", headers={"authorization": f"Bearer {BETA}"})
    assert beta.status_code == 200 and "alpha" not in beta.text
    counted = _samples(beta.text)
    assert counted[("vlk_memact_chars_injected_total", (("tenant", "beta"),))] == 0
    assert all(value == 0 for (name, _), value in counted.items() if name.endswith("_total"))
