"""A run from Python is the run `resim run` makes: same digest, same figures, same errors."""

import concurrent.futures
import json
import re
import subprocess
import sys

import pytest

import resim
from conftest import REPO, SHORT


def pinned_digests():
    """The digest of every library scenario at its own seed, as the determinism test pins
    them for `resim run NAME` (tests/tests/snapshots/…library_digests.snap)."""
    snap = REPO / "tests/tests/snapshots/determinism__determinism__library_digests.snap"
    body = snap.read_text().split("---\n", 2)[2]
    line = re.compile(r"^(\S+)\s+seed (\d+) events\s+(\d+) digest ([0-9a-f]+)$")
    return [line.match(l).groups() for l in body.splitlines() if l.strip()]


def test_every_library_scenario_gives_the_pinned_digest_of_resim_run():
    pinned = pinned_digests()
    assert [name for name, *_ in pinned] == [name for name, _ in resim.library()]

    def run(name):
        r = resim.load(name).run()
        return name, str(r.seed), str(r.events), r.digest

    # Two at a time: a run releases the GIL.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(run, [name for name, *_ in pinned]))
    assert got == [tuple(p) for p in pinned]


def test_a_run_with_overrides_is_the_cli_run_figure_for_figure(cli):
    args = ["--seed", "3", "--set", "duration=20s", "--set", "services.api.workers=3"]
    code, out, _ = cli("run", SHORT, *args, "--json")
    assert code in (0, 1)
    expected = json.loads(out)
    run = resim.load(SHORT, set={"duration": "20s", "services.api.workers": 3}).run(seed=3)
    assert run.digest == expected["digest"]
    assert run.report == expected
    assert run.summary == expected["summary"]
    assert run.expectations == expected["expectations"]
    assert run.replay == f"resim run {SHORT} --seed 3 --set 'duration=20s' --set 'services.api.workers=3'"
    _, csv, _ = cli("run", SHORT, *args, "--format", "csv")
    assert run._inner.to_csv() == csv
    _, text, _ = cli("run", SHORT, *args)
    assert run.text() == text


def test_duration_and_event_budget_are_the_cli_flags(cli):
    code, out, _ = cli("run", SHORT, "--duration", "5s", "--max-events", "2000", "--json")
    expected = json.loads(out)
    run = resim.load(SHORT).run(duration="5s", max_events=2000)
    assert (run.digest, run.events, run.stop_reason) == (
        expected["digest"],
        expected["events"],
        expected["stop_reason"],
    )
    assert run.stop_reason == "event_budget"


def test_a_variant_is_applied_as_the_cli_applies_it(cli):
    base = resim.load("client-errors")
    assert base.variants == ["server-errors"]
    varied = resim.load("client-errors", variant="server-errors").run()
    assert varied.digest != base.run().digest
    assert varied.replay == "resim run client-errors --seed 1 --variant server-errors"
    _, out, _ = cli("run", "client-errors", "--variant", "server-errors", "--json")
    assert varied.digest == json.loads(out)["digest"]


def test_a_syntax_error_is_raised_with_its_file_line_and_column(tmp_path, cli):
    path = tmp_path / "broken.ron"
    path.write_text('Scenario(\n    name: "x",\n    duration: 10s,\n)\n')
    with pytest.raises(resim.ScenarioError) as raised:
        resim.load(str(path))
    e = raised.value
    assert (e.file, e.line, e.column, e.path) == (str(path), 3, 15, None)
    code, _, err = cli("check", str(path))
    assert code == 2
    assert str(e) == e.message == err.strip()


def test_an_impossible_value_is_raised_with_its_field_path(tmp_path, cli):
    path = tmp_path / "zero.ron"
    path.write_text(
        'Scenario(\n    name: "zero",\n    duration: "10s",\n'
        '    clients: { "c": (load: Open(rate: Constant("50/s")), call: (target: "s", timeout: "1s")) },\n'
        '    services: { "s": (workers: 0, work: Exponential(mean: "10ms")) },\n)\n'
    )
    with pytest.raises(resim.ScenarioError) as raised:
        resim.load(str(path))
    e = raised.value
    assert (e.file, e.line, e.column, e.path) == (str(path), None, None, "services.s.workers")
    code, _, err = cli("check", str(path))
    assert code == 2
    assert str(e) == err.strip()


def test_an_impossible_override_is_the_cli_error(cli):
    with pytest.raises(resim.ScenarioError) as raised:
        resim.load(SHORT, set={"services.api.workers": 0})
    e = raised.value
    assert e.file == SHORT
    code, _, err = cli("check", SHORT, "--set", "services.api.workers=0")
    assert code == 2
    assert str(e) == err.strip()
    assert "--set services.api.workers=0" in str(e)


def test_a_malformed_setting_is_the_cli_error(cli):
    with pytest.raises(resim.ScenarioError) as raised:
        resim.load(SHORT, set={"services..workers": 3})
    code, _, err = cli("check", SHORT, "--set", "services..workers=3")
    assert code == 2
    assert str(raised.value) == err.strip()
    with pytest.raises(resim.ScenarioError, match="duration"):
        resim.load(SHORT).run(duration="ten seconds")


def test_a_missing_file_names_it():
    with pytest.raises(resim.ScenarioError) as raised:
        resim.load("no-such-file.ron")
    assert raised.value.file == "no-such-file.ron"
    assert "cannot read" in str(raised.value)


def test_tables_are_records_without_pandas(monkeypatch):
    run = resim.load(SHORT).run()
    monkeypatch.setitem(sys.modules, "pandas", None)
    series = run.series()
    assert isinstance(series, list) and isinstance(series[0], dict)
    assert len(series) == len(run.report["series"])
    assert [row["offered"] for row in series] == [r["offered"] for r in run.report["series"]]
    services = run.services()
    assert [s["name"] for s in services] == [s["name"] for s in run.report["services"]]
    assert all("." not in k or not isinstance(v, dict) for s in services for k, v in s.items())
    calls = run.calls()
    assert len(calls) == len(run.report["calls"])


WITHOUT_PANDAS = """
import sys
sys.modules["pandas"] = None
import resim
scenario = resim.load("client-errors", set={"duration": "2s"})
run = scenario.run(seed=3)
sweep = resim.sweep(scenario, seeds=range(1, 4), jobs=2)
print(run.digest, type(run.series()).__name__, type(sweep).__name__, [r["seed"] for r in sweep])
"""


def test_the_package_imports_and_works_without_pandas():
    # A fresh interpreter where `import pandas` fails from the start, not only after `resim`
    # was imported with it.
    done = subprocess.run([sys.executable, "-c", WITHOUT_PANDAS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    digest, series, sweep, seeds = done.stdout.split(" ", 3)
    assert digest == resim.load(SHORT, set={"duration": "2s"}).run(seed=3).digest
    assert (series, sweep, seeds.strip()) == ("list", "list", "[1, 2, 3]")


def test_tables_are_dataframes_with_pandas():
    pandas = pytest.importorskip("pandas")
    run = resim.load(SHORT).run()
    series = run.series()
    assert isinstance(series, pandas.DataFrame)
    assert list(series["offered"]) == [r["offered"] for r in run.report["series"]]
    services = run.services()
    assert list(services["name"]) == [s["name"] for s in run.report["services"]]


def test_charts_and_the_html_page_are_the_cli_ones(tmp_path, cli):
    run = resim.load(SHORT).run()
    charts = run.charts()
    assert "traffic" in charts and charts["traffic"].startswith("<svg")
    page = tmp_path / "run.html"
    cli("run", SHORT, "--html", str(page))
    assert run.html() == page.read_text()
    shown = run._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and "&lt;svg" in shown
