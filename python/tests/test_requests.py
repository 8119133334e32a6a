"""Run.requests(): the requests a run keeps when asked, the ones `resim run --spans` writes, a
row each; a run that does not ask keeps none and is the same run."""

import json

import pytest

import resim
from conftest import SHORT


def otlp_requests(path):
    """Each trace of an OTLP file `resim run --spans` wrote: its root span and its spans."""
    out = {}
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            service = next(a["value"]["stringValue"] for a in resource["resource"]["attributes"] if a["key"] == "service.name")
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    t = out.setdefault(span["traceId"], {"spans": []})
                    t["spans"].append(span)
                    if "parentSpanId" not in span:
                        t["root"], t["service"] = span, service
    return out


def test_the_requests_kept_are_those_resim_run_spans_writes(tmp_path, cli):
    spans = tmp_path / "spans.jsonl"
    code, _, _ = cli("run", SHORT, "--seed", "2", "--set", "duration=5s", "--spans", str(spans), "--spans-sample", "0.05")
    assert code in (0, 1)
    traces = otlp_requests(spans)
    scenario = resim.load(SHORT, set={"duration": "5s"})
    run = scenario.run(seed=2, requests=0.05)
    assert run.digest == scenario.run(seed=2).digest
    got = run.requests()
    got = got if isinstance(got, list) else got.to_dict("records")
    assert len(got) == len(traces) > 10
    for row in got:
        t = traces[row["trace_id"]]
        root = t["root"]
        assert (row["client"], row["call"]) == (t["service"], root["name"])
        assert (row["start_ns"], row["end_ns"]) == (int(root["startTimeUnixNano"]), int(root["endTimeUnixNano"]))
        assert row["outcome"] == root["status"].get("message", "ok")
        attempts = [s for s in t["spans"] if s.get("parentSpanId") == root["spanId"] and s["kind"] == 3]
        assert row["attempts"] == len(attempts) >= 1
        assert row["spans"] == len(t["spans"])
        assert row["latency_ms"] == pytest.approx((row["end_ns"] - row["start_ns"]) / 1e6)


def test_every_request_is_kept_when_asked_and_none_otherwise():
    scenario = resim.load(SHORT, set={"duration": "2s"})
    run = scenario.run(requests=True)
    kept = run.requests()
    kept = kept if isinstance(kept, list) else kept.to_dict("records")
    assert len(kept) == run.summary["offered"]
    assert {r["outcome"] for r in kept} >= {"ok"}
    with pytest.raises(ValueError, match="requests=SHARE"):
        scenario.run().requests()
    for bad in (1.5, -0.1, "all"):
        with pytest.raises(ValueError, match="from 0 to 1"):
            scenario.run(requests=bad)
