"""compare, phase, tune and risk: the answers of `resim compare|phase|tune|risk` for the same
arguments, as dicts and tables; the command line's defaults and errors; Ctrl-C."""

import json

import pytest

import resim
from conftest import SHORT
from test_sweep import interrupt, rows


def test_compare_is_the_cli_comparison(cli):
    a = resim.load(SHORT)
    b = resim.load(SHORT, variant="server-errors")
    got = resim.compare(a, b, seeds=range(1, 4), duration="10s", jobs=2)
    args = [SHORT, "--variant", "server-errors", "--seeds", "1..3", "--duration", "10s"]
    code, out, _ = cli("compare", *args, "--format", "json")
    assert code == 0
    assert got.data == json.loads(out)
    assert got.text == cli("compare", *args)[1]
    table = rows(got.table())
    assert [r["figure"] for r in table] == [f["figure"] for f in got.data["figures"]]
    first = got.data["figures"][0]
    assert table[0]["a.mean"] == first["a"]["mean"]
    assert (table[0]["interval.low"], table[0]["interval.high"]) == tuple(first["interval"])
    assert table[0]["significant"] == first["significant"]


def test_compare_takes_the_cli_default_seeds(cli):
    got = resim.compare(resim.load(SHORT, set={"duration": "2s"}), resim.load(SHORT, set={"duration": "2s"}))
    assert got.data["seeds"] == [1, 20]


PHASE = ["--x", "services.api.workers=2,8", "--y", "load=0.5,2"]


def test_phase_is_the_cli_map(cli):
    scenario = resim.load("metastable-retry", set={"duration": "20s"})
    got = resim.phase(scenario, x="services.api.workers=2,8", y=("load", [0.5, 2]), seeds=range(1, 3))
    args = ["metastable-retry", *PHASE, "--seeds", "1..2", "--set", "duration=20s"]
    code, out, _ = cli("phase", *args, "--format", "json")
    assert code == 0, out
    assert got.data == json.loads(out)
    assert got.text == cli("phase", *args)[1]
    cells = rows(got.table())
    assert [(c["x"], c["y"]) for c in cells] == [(c["x"], c["y"]) for c in got.data["cells"]]
    assert sum(c["stable"] + c["metastable"] + c["collapsed"] for c in cells) == 4 * 2
    assert got.svg.startswith("<svg")


TUNE = ["--param", "services.api.workers=1,2,4", "--minimize", "services.api.workers", "--seeds", "1..4"]


def test_tune_is_the_cli_race_and_its_recommendation(tmp_path, cli):
    scenario = resim.load(SHORT, set={"duration": "10s"})
    got = resim.tune(
        scenario, params={"services.api.workers": [1, 2, 4]}, minimize="services.api.workers", seeds=range(1, 5), jobs=2
    )
    out = tmp_path / "tune.jsonl"
    code, text, _ = cli("tune", SHORT, *TUNE, "--set", "duration=10s", "--out", str(out))
    assert code == 0 and got.passed
    assert got.text == text
    assert rows(got.runs()) == [json.loads(line) for line in out.read_text().splitlines()]
    r = got.recommendation
    assert f"recommended: {r['candidate']}" in text
    assert r["settings"] == {"services.api.workers": r["candidate"].split("=", 1)[1]}
    assert r["cost"] == float(r["settings"]["services.api.workers"])
    assert r["words"].endswith(f"--set '{r['candidate']}'")
    race = [x for x in rows(got.runs()) if x["candidate"] == r["candidate"]]
    assert (r["runs"], r["passed"]) == (len(race), sum(x["passed"] for x in race))


def test_a_tune_without_an_answer_says_so(cli):
    # At 5 s every candidate fails seed 1: no recommendation, and `resim tune` exits 1.
    scenario = resim.load(SHORT, set={"duration": "5s"})
    got = resim.tune(scenario, params={"services.api.workers": [1, 2, 4]}, seeds=range(1, 5))
    code, text, _ = cli("tune", SHORT, "--param", "services.api.workers=1,2,4", "--seeds", "1..4", "--set", "duration=5s")
    assert code == 1 and not got.passed
    assert got.recommendation is None
    assert got.text == text


RISK = ["--event", "queue:api>=500", "--horizon", "11s", "--method", "plain", "--budget", "24runs"]


def test_risk_is_the_cli_estimate(cli):
    # About half of the runs see the spike fill the queue to 500 within 11 s.
    scenario = resim.load("metastable-retry", set={"expectations": "[]"})
    got = resim.risk(scenario, "queue:api>=500", "11s", method="plain", budget="24runs", jobs=2)
    args = ["metastable-retry", *RISK, "--set", "expectations=[]"]
    code, out, _ = cli("risk", *args, "--json")
    assert code == 0, out
    assert got.data == json.loads(out)
    assert got.text == cli("risk", *args)[1]
    assert (got.data["method"], got.data["runs"]) == ("plain", 24)
    assert 0 < got.data["hits"] < 24
    assert got.data["low"] < got.data["probability"] < got.data["high"]


def test_the_cli_errors_are_raised_with_its_words(cli):
    scenario = resim.load(SHORT)
    with pytest.raises(resim.ScenarioError) as raised:
        resim.risk(scenario, "queue:api>=3", "5s", rel_error=2)
    code, _, err = cli("risk", SHORT, "--event", "queue:api>=3", "--horizon", "5s", "--rel-error", "2")
    assert code == 2
    assert str(raised.value) == err.strip()
    with pytest.raises(resim.ScenarioError, match="--param"):
        resim.tune(scenario, params={"services.api.workers": "8..1"})
    with pytest.raises(resim.ScenarioError, match="nowhere"):
        resim.phase(scenario, x="services.nowhere.workers=1,2", y="load=1,2")
    with pytest.raises(ValueError, match="consecutive"):
        resim.compare(scenario, scenario, seeds=[1, 5])
    with pytest.raises(TypeError, match="Scenario"):
        resim.tune(SHORT, params={"services.api.workers": [1]})


def test_ctrl_c_ends_a_long_splitting_replication_within_a_second():
    # Splitting is asked for an event no run reaches (a first passage: no pilot), so its two
    # replications follow their four trajectories through 5×10⁸ events each: minutes of work
    # inside one replication, which looks at Ctrl-C at each trajectory's event.
    call = (
        "resim.risk(scenario, 'queue:api>=1000000', '1d', method='splitting', particles=4,"
        " replications=2, budget='1e9', jobs=1)"
    )
    out, seconds = interrupt("1d", call)
    assert out == "interrupted"
    assert seconds < 1.0, f"the estimate took {seconds:.2f}s to stop"


def test_ctrl_c_ends_a_long_tune_within_a_second():
    # 40 seeds of an hour each for four candidates: minutes of work.
    call = "resim.tune(scenario, params={'services.api.workers': [1, 2, 3, 4]}, jobs=2)"
    out, seconds = interrupt("1h", call)
    assert out == "interrupted"
    assert seconds < 1.0, f"the tune took {seconds:.2f}s to stop"
