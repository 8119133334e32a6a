"""The progress bar: counts from the Rust side on the calling thread, tqdm's bar when asked or
when someone watches, and the package without tqdm."""

import subprocess
import sys

import pytest

import resim
from resim import _progress, _resim
from conftest import SHORT


def test_the_counts_reach_every_run_in_order():
    scenario = resim.load(SHORT, set={"duration": "20s"})
    seen = []
    _resim.sweep(scenario._inner, (1, 12), [], 2, None, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (12, 12)
    assert all(total == 12 for _, total in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_tunes_total_grows_as_the_race_asks_for_runs():
    scenario = resim.load(SHORT, set={"duration": "5s"})
    seen = []
    words = ["tune", SHORT, "--param", "services.api.workers=1,2,4", "--seeds", "1..6"]
    _resim.tune(scenario._inner, words, lambda done, total: seen.append((done, total)))
    done, total = seen[-1]
    assert done == total > 0
    assert all(d <= t for d, t in seen)


def test_a_comparison_counts_both_sides_runs():
    a = resim.load(SHORT, set={"duration": "5s"})
    b = resim.load(SHORT, variant="server-errors", set={"duration": "5s"})
    seen = []
    words = ["compare", SHORT, SHORT, "--seeds", "1..6"]
    _resim.compare(a._inner, b._inner, words, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (12, 12)
    assert all(total == 12 for _, total in seen)


def test_a_risk_estimate_counts_its_pilot_then_its_plan():
    # --method plain: a pilot of one batch of 8 plain runs, then the 16 left of the 24 asked.
    scenario = resim.load("metastable-retry", set={"expectations": "[]"})
    seen = []
    words = ["risk", "metastable-retry", "--event", "queue:api>=500", "--horizon", "11s"]
    words += ["--method", "plain", "--budget", "24runs"]
    _resim.risk(scenario._inner, words, lambda done, total: seen.append((done, total)))
    assert seen[-1] == (24, 24)
    assert all(d <= t for d, t in seen)
    assert [t for _, t in seen] == sorted(t for _, t in seen)


def test_progress_true_draws_a_tqdm_bar(capsys):
    pytest.importorskip("tqdm")
    scenario = resim.load(SHORT, set={"duration": "5s"})
    drawn = _progress.bar(True, "runs")
    assert drawn is not None
    drawn(3, 8)
    assert (drawn.shown.n, drawn.shown.total) == (3, 8)
    drawn.close()
    table = resim.sweep(scenario, seeds=range(1, 5), progress=True)
    assert len(table) == 4
    assert "runs" in capsys.readouterr().err


def test_no_bar_where_no_one_watches():
    # Under pytest standard error is no terminal and no notebook runs: no bar by default.
    assert _progress.bar(None, "runs") is None
    assert _progress.bar(False, "runs") is None
    with pytest.raises(TypeError, match="progress"):
        _progress.bar("yes", "runs")


WITHOUT_TQDM = """
import sys
sys.modules["tqdm"] = None
sys.modules["tqdm.auto"] = None
import resim
scenario = resim.load("client-errors", set={"duration": "2s"})
print(len(resim.sweep(scenario, seeds=range(1, 4), progress=None)))
try:
    resim.sweep(scenario, seeds=range(1, 4), progress=True)
except ImportError as e:
    print(e)
"""


def test_the_package_works_without_tqdm():
    done = subprocess.run([sys.executable, "-c", WITHOUT_TQDM], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "3"
    assert "pip install tqdm" in lines[1]
