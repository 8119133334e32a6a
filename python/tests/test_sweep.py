"""Sweeps: the rows of `resim sweep`, the same whatever the number of threads, and Ctrl-C."""

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import resim
from conftest import SHORT


def rows(table):
    """A table's rows as dicts, with or without pandas."""
    return table if isinstance(table, list) else table.to_dict("records")


def test_the_same_rows_whatever_the_number_of_threads():
    scenario = resim.load(SHORT, set={"duration": "10s"})
    grid = {"services.api.workers": [2, 4]}
    one = rows(resim.sweep(scenario, seeds=range(1, 7), grid=grid, jobs=1))
    two = rows(resim.sweep(scenario, seeds=range(1, 7), grid=grid, jobs=2))
    assert one == two
    assert len(one) == 12
    assert [r["index"] for r in one] == list(range(12))
    assert [(r["point"], r["seed"]) for r in one[:7]] == [
        ("services.api.workers=2", s) for s in range(1, 7)
    ] + [("services.api.workers=4", 1)]


def test_a_row_is_the_run_of_its_seed_and_point():
    scenario = resim.load(SHORT, set={"duration": "10s"})
    table = rows(resim.sweep(scenario, seeds=range(5, 8), grid={"services.api.workers": [3]}))
    alone = resim.load(SHORT, set={"duration": "10s", "services.api.workers": 3})
    for row in table:
        run = alone.run(seed=row["seed"])
        assert row["digest"] == run.digest
        assert row["offered"] == run.summary["offered"]
        assert row["passed"] == run.passed


def test_the_cli_sweep_gives_the_same_records(tmp_path, cli):
    out = tmp_path / "runs.jsonl"
    cli("sweep", SHORT, "--seeds", "1..4", "--set", "duration=10s", "--grid", "services.api.workers=2,4", "--out", str(out))
    expected = [json.loads(line) for line in out.read_text().splitlines()]
    got = rows(resim.sweep(resim.load(SHORT, set={"duration": "10s"}), seeds=range(1, 5), grid={"services.api.workers": "2,4"}))
    assert got == expected


def test_bad_arguments_are_said():
    scenario = resim.load(SHORT)
    with pytest.raises(ValueError, match="at least 1"):
        resim.sweep(scenario, seeds=range(1, 3), jobs=0)
    with pytest.raises(resim.ScenarioError, match="--grid"):
        resim.sweep(scenario, seeds=range(1, 3), grid={"services.nowhere.workers": [1, 2]})


INTERRUPTED = """
import signal, sys, time, resim
# Python's own Ctrl-C handler, whatever this process inherited: a shell that starts a command
# in the background (a CI runner may) has it ignore SIGINT, and Python keeps an ignored signal
# ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
scenario = resim.load("metastable-retry", set={"duration": "%s"})
print("started", flush=True)
try:
    %s
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(0)
print("finished", flush=True)
sys.exit(1)
"""


def interrupt(duration, call):
    """Starts `call` in a fresh interpreter, sends it SIGINT half a second in, and gives what
    it printed and the seconds from the signal to its exit."""
    script = INTERRUPTED % (duration, call)
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "started"
    time.sleep(0.5)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    try:
        out, _ = child.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("Ctrl-C did not stop the work within 10 s")
    return out.strip(), time.monotonic() - sent


def test_ctrl_c_ends_a_long_sweep_within_a_second():
    # 1,000 seeds of 60 s each: minutes of work.
    out, seconds = interrupt("60s", "resim.sweep(scenario, seeds=range(1, 1001), jobs=2)")
    assert out == "interrupted"
    assert seconds < 1.0, f"the sweep took {seconds:.2f}s to stop"


def test_ctrl_c_ends_a_long_run_within_a_second():
    # One run of a simulated day: minutes of work.
    out, seconds = interrupt("1d", "scenario.run()")
    assert out == "interrupted"
    assert seconds < 1.0, f"the run took {seconds:.2f}s to stop"


def test_seeds_are_any_iterable_each_row_the_run_of_its_seed_alone():
    numpy = pytest.importorskip("numpy")
    scenario = resim.load(SHORT, set={"duration": "5s"})
    cases = [
        ([9, 2, 40], [9, 2, 40]),
        (range(3, 12, 4), [3, 7, 11]),
        (numpy.array([7, 0, 5], dtype=numpy.uint64), [7, 0, 5]),
        ((s for s in (6, 1)), [6, 1]),
    ]
    for seeds, wanted in cases:
        table = rows(resim.sweep(scenario, seeds=seeds, jobs=2))
        assert [r["seed"] for r in table] == wanted
        assert [r["index"] for r in table] == list(range(len(wanted)))
        for row in table:
            run = scenario.run(seed=row["seed"])
            assert (row["digest"], row["offered"]) == (run.digest, run.summary["offered"])


def test_a_list_of_seeds_is_the_range_when_it_is_one():
    scenario = resim.load(SHORT, set={"duration": "5s"})
    grid = {"services.api.workers": [2, 3]}
    assert rows(resim.sweep(scenario, seeds=[4, 5, 6], grid=grid)) == rows(resim.sweep(scenario, seeds=range(4, 7), grid=grid))


def test_bad_seeds_are_said():
    scenario = resim.load(SHORT)
    for seeds, said in (
        ([1, -2], "from 0"),
        ([3, 5, 3], "seed 3 is given twice"),
        ([1.5], "whole number"),
        (["1"], "whole number"),
        ([True], "whole number"),
        ([], "empty"),
        (7, "iterable"),
        (range(5, 1), "empty"),
    ):
        with pytest.raises(ValueError, match=said):
            resim.sweep(scenario, seeds=seeds)
