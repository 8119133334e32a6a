"""``compare``, ``phase``, ``tune`` and ``risk``: the command line's experiments. Each builds
the words of its ``resim`` command from Python arguments (an argument left ``None`` is a flag
not given, so the command line's default applies), and the extension module reads them with
the command line's own parser and runs the experiment through the library: the same defaults,
checks, error messages and answers as ``resim compare|phase|tune|risk``."""

import json

from resim import _progress, _resim
from resim._api import Scenario, _duration, _ron
from resim._tables import flat, table


def _scenario(value, name="scenario"):
    if not isinstance(value, Scenario):
        raise TypeError(f"{name} is a Scenario from resim.load, not {type(value).__name__}")
    return value


def _seed_range(seeds):
    """A range of consecutive seeds as ``--seeds`` takes it (``A..B``)."""
    if isinstance(seeds, range) and seeds.step == 1 and len(seeds) > 0 and seeds.start >= 0:
        return f"{seeds.start}..{seeds.stop - 1}"
    raise ValueError(
        f"seeds is a non-empty range of consecutive non-negative seeds, e.g. range(1, 21), not {seeds!r}"
    )


def _flags(**given):
    """``--name value`` words for each argument given (``None``: not given; ``True``: the bare
    flag; ``jobs``: ``-j``)."""
    words = []
    for name, value in given.items():
        if value is None or value is False:
            continue
        if name == "jobs":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"jobs is a number of threads, at least 1, not {value!r}")
            words += ["-j", str(value)]
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            words.append(flag)
        elif name == "seeds":
            words += [flag, _seed_range(value)]
        elif name in ("duration", "horizon"):
            words += [flag, _duration(value)]
        else:
            words += [flag, str(value)]
    return words


def _axis(path_values, name):
    """An axis as ``--x``, ``--y`` or ``--param`` take it: the text (``"path=8,16"``,
    ``"path=8..32:8"``), or a ``(path, values)`` pair with a list of values or their text."""
    if isinstance(path_values, str):
        return path_values
    if isinstance(path_values, tuple) and len(path_values) == 2:
        path, values = path_values
        if isinstance(values, str):
            return f"{path}={values}"
        return f"{path}={','.join(_ron(v) for v in values)}"
    raise TypeError(f"{name} is 'PATH=VALUES' or a (path, values) pair, not {path_values!r}")


class Comparison:
    """``resim compare``: two scenarios on the same seeds, their figures and the paired
    differences with their 95% intervals."""

    def __init__(self, data, text):
        self.data = data
        self.text = text

    def table(self):
        """One row per figure: ``figure``, each side's ``a.mean``, ``a.sd``, ``a.count``,
        ``b.…``, the paired ``difference.…``, its interval (``interval.low``,
        ``interval.high``; ``None`` with one seed) and ``significant``."""
        rows = []
        for f in self.data["figures"]:
            low, high = f["interval"] if f["interval"] else (None, None)
            row = flat({k: v for k, v in f.items() if k != "interval"})
            row["interval.low"], row["interval.high"] = low, high
            rows.append(row)
        return table(rows)

    def __repr__(self):
        return f"<resim.Comparison {self.data['a']!r} vs {self.data['b']!r} seeds {self.data['seeds']}>"


def compare(a, b, seeds=None, duration=None, jobs=None, progress=None):
    """Runs ``a`` and ``b`` (each loaded with its own variant and overrides) on the same seeds
    and compares them, as ``resim compare A B --seeds S --duration D -j N --format json``:
    ``seeds`` a range of consecutive seeds (``None``: 1 to 20, the command's default). Each
    side's label is its file with its variant and overrides, as command-line words.
    ``progress``: a bar of both sides' runs, as for ``sweep``. Releases the GIL; Ctrl-C raises
    ``KeyboardInterrupt``."""
    a, b = _scenario(a, "a"), _scenario(b, "b")
    words = ["compare", a.file, b.file] + _flags(seeds=seeds, duration=duration, jobs=jobs)
    data, text = _progress.running(
        progress, "runs", lambda update: _resim.compare(a._inner, b._inner, words, update)
    )
    return Comparison(json.loads(data), text)


class PhaseMap:
    """``resim phase``: each cell of the map (an x value and a y value) with its runs by
    class (stable, metastable, collapsed) and P(metastable) with its exact 95% interval."""

    def __init__(self, data, text, svg):
        self.data = data
        self.text = text
        self.svg = svg

    def table(self):
        """One row per cell, in the order of ``--format json``: ``x``, ``y``, ``stable``,
        ``metastable``, ``collapsed``, ``recovered_after_s_max``, ``metastable_low``,
        ``metastable_high``."""
        return table([dict(c) for c in self.data["cells"]])

    def __repr__(self):
        return f"<resim.PhaseMap {self.data['scenario']!r} {self.data['x']} × {self.data['y']}>"


def phase(scenario, x, y, seeds=None, jobs=None, progress=None):
    """The phase map of ``scenario`` over two axes, as ``resim phase FILE --x X --y Y --seeds S
    -j N --format json``: ``x`` and ``y`` as ``--x`` takes them (``"path=8,16,32"``,
    ``"path=8..32:8"``) or ``(path, [values])``; ``seeds`` a range of consecutive seeds
    (``None``: 1 to 5, the command's default). ``progress``: a bar of the runs, as for
    ``sweep``. Releases the GIL; Ctrl-C raises ``KeyboardInterrupt``."""
    scenario = _scenario(scenario)
    words = ["phase", scenario.file, "--x", _axis(x, "x"), "--y", _axis(y, "y")]
    words += _flags(seeds=seeds, jobs=jobs)
    data, text, svg = _progress.running(
        progress, "runs", lambda update: _resim.phase(scenario._inner, words, update)
    )
    return PhaseMap(json.loads(data), text, svg)


class Tuning:
    """``resim tune``: the race of the candidate settings, their margins when asked, and the
    recommendation."""

    def __init__(self, text, passed, runs, recommendation):
        self.text = text
        self.passed = passed
        self._runs = runs
        self.recommendation = recommendation

    def runs(self):
        """Every run of the race and of the margins, then every stress level tried, one row
        each: the lines ``resim tune --out FILE`` writes (``stage`` is ``race``, ``margin`` or
        ``level``)."""
        return table([json.loads(line) for line in self._runs.splitlines()])

    def __repr__(self):
        chosen = self.recommendation["candidate"] if self.recommendation else "none"
        return f"<resim.Tuning recommended: {chosen}>"


def tune(
    scenario,
    params,
    seeds=None,
    budget=None,
    pass_rate=None,
    minimize=None,
    maximize_margin=False,
    stress=None,
    margin_at_least=None,
    margin_seeds=None,
    margin_seeds_max=None,
    threshold=None,
    confidence=None,
    jobs=None,
    progress=None,
):
    """Races the candidate settings of ``scenario`` as ``resim tune FILE --param P … --seeds S
    …`` does: ``params`` is ``{path: [values]}`` (or ``{path: "text as --param takes it"}``,
    e.g. ``"1..8"``), every combination a candidate; the other arguments are the command's
    flags of the same names (``None``: its default; ``seeds`` a range of consecutive seeds).
    ``recommendation`` is a dict (``None`` when no candidate meets the requirement);
    ``passed`` says whether one did. ``progress``: a bar of the runs, as for ``sweep`` (its
    total grows as the race asks for more). Releases the GIL; Ctrl-C raises
    ``KeyboardInterrupt``."""
    scenario = _scenario(scenario)
    if not params:
        raise ValueError("params names at least one knob: {path: [values]}")
    words = ["tune", scenario.file]
    for path, values in params.items():
        words += ["--param", _axis((path, values), "a param")]
    words += _flags(
        seeds=seeds,
        budget=budget,
        pass_rate=pass_rate,
        minimize=minimize,
        maximize_margin=maximize_margin,
        stress=stress,
        margin_at_least=margin_at_least,
        margin_seeds=margin_seeds,
        margin_seeds_max=margin_seeds_max,
        threshold=threshold,
        confidence=confidence,
        jobs=jobs,
    )
    text, passed, runs, recommendation = _progress.running(
        progress, "runs", lambda update: _resim.tune(scenario._inner, words, update)
    )
    return Tuning(text, passed, runs, None if recommendation is None else json.loads(recommendation))


class RiskEstimate:
    """``resim risk``: the probability that an event happens within a horizon, its 95%
    interval, the method and why, and a run that reached it."""

    def __init__(self, data, text):
        self.data = data
        self.text = text

    def __repr__(self):
        d = self.data
        return f"<resim.RiskEstimate P({d['event']} within {d['horizon']}) = {d['probability']:.3g} [{d['low']:.3g}, {d['high']:.3g}]>"


def risk(
    scenario,
    event,
    horizon,
    seeds=None,
    budget=None,
    method=None,
    importance=None,
    particles=None,
    replications=None,
    rel_error=None,
    jobs=None,
    progress=None,
):
    """The probability that ``event`` happens within ``horizon`` in ``scenario``, as ``resim
    risk FILE --event E --horizon H … --json`` estimates it: the other arguments are the
    command's flags of the same names (``None``: its default; ``seeds`` a range of
    consecutive seeds, ``budget`` a text such as ``"1e8"`` events or ``"200runs"``).
    ``progress``: a bar, as for ``sweep``, of the pilot's plain runs and then the plan's
    plain runs or replications of splitting (its total grows when the plan is made).
    Releases the GIL; Ctrl-C raises ``KeyboardInterrupt`` (plain runs look at it every 65,536
    events, splitting's trajectories before each event)."""
    scenario = _scenario(scenario)
    words = ["risk", scenario.file, "--event", str(event)]
    words += _flags(
        horizon=horizon,
        seeds=seeds,
        budget=budget,
        method=method,
        importance=importance,
        particles=particles,
        replications=replications,
        rel_error=rel_error,
        jobs=jobs,
    )
    data, text = _progress.running(
        progress, "runs", lambda update: _resim.risk(scenario._inner, words, update)
    )
    return RiskEstimate(json.loads(data), text)
