"""The Python face of the extension module: ``load``, ``Scenario``, ``Run`` and ``sweep``,
each a thin layer over the command line's library code (``resim._resim``)."""

import datetime
import html
import json
import operator
import os

from resim import _progress, _resim
from resim._tables import flat, from_csv, table


def library():
    """The library scenarios, in ``resim list`` order: a list of ``(name, description)``."""
    return _resim.library()


def _ron(value):
    """A Python value as the text ``--set`` takes: a string as typed (RON, where a duration
    or a rate may go without quotes, e.g. ``"30s"``; a RON string needs its quotes,
    ``'"api"'``), a bool as ``true``/``false``, a number as Python writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    raise TypeError(
        f"a setting's value is a str (RON, as --set takes it), an int, a float or a bool, not {type(value).__name__}"
    )


def _duration(value):
    """A duration as ``--duration`` takes it: a string (``"30s"``) or a ``timedelta``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime.timedelta):
        return f"{value // datetime.timedelta(microseconds=1)}us"
    raise TypeError(f"a duration is a str such as '30s' or a datetime.timedelta, not {type(value).__name__}")


def load(path_or_name, set=None, variant=None):
    """Reads a scenario as ``resim run`` does: a ``.ron`` file, else the library scenario of
    that name; every variant of the file checked; then ``variant`` and the ``set`` overrides
    (``{path: value}``, in order, as ``--set path=value``) applied and validated.

    Raises ``ScenarioError`` with the command line's message and place."""
    sets = [f"{path}={_ron(value)}" for path, value in (set or {}).items()]
    return Scenario(_resim.load(os.fspath(path_or_name), sets, variant))


class Scenario:
    """A scenario read, overridden and validated: ``run`` it, or ``sweep`` it."""

    def __init__(self, inner):
        self._inner = inner

    @property
    def name(self):
        """The scenario's ``name`` field."""
        return self._inner.name

    @property
    def file(self):
        """The file or library name as given to ``load``."""
        return self._inner.file

    @property
    def seed(self):
        """The scenario's own seed, which ``run`` uses when given none."""
        return self._inner.seed

    @property
    def variants(self):
        """The names of the file's variants."""
        return list(self._inner.variants)

    def run(self, seed=None, duration=None, max_events=None, requests=None):
        """One run, as ``resim run FILE --seed SEED --duration D --max-events N``: the same
        digest and figures. ``requests``, a share from 0 to 1 (``True``: every request), keeps
        that share of the client requests whole for ``Run.requests()``, as ``resim run --spans
        FILE --spans-sample SHARE`` writes them; ``None`` keeps none, and the run costs what a
        plain run does. The GIL is released while it runs; Ctrl-C stops it
        (``KeyboardInterrupt``)."""
        if requests is True:
            requests = 1.0
        if requests is not None and (
            isinstance(requests, bool) or not isinstance(requests, (int, float)) or not 0 <= requests <= 1
        ):
            raise ValueError(
                f"requests is the share of the requests to keep, from 0 to 1 (e.g. 0.1), True for all, or None; not {requests!r}"
            )
        share = None if requests is None else float(requests)
        return Run(self._inner.run(seed, _duration(duration), max_events, share))

    def __repr__(self):
        return repr(self._inner)


class Run:
    """One run's report: ``digest``, ``summary``, ``expectations``, tables of its series,
    services and calls, its charts and its HTML page."""

    def __init__(self, inner):
        self._inner = inner
        self._report = None

    @property
    def digest(self):
        """The run's digest, as ``resim run`` prints it."""
        return self._inner.digest

    @property
    def seed(self):
        """The seed the run used."""
        return self._inner.seed

    @property
    def events(self):
        """Events executed."""
        return self._inner.events

    @property
    def stop_reason(self):
        """Why the run stopped: ``time_limit``, ``event_budget``, ``memory_limit`` or ``no_events``."""
        return self._inner.stop_reason

    @property
    def passed(self):
        """Whether every expectation held."""
        return self._inner.passed

    @property
    def replay(self):
        """The command that replays this run."""
        return self._inner.replay

    @property
    def report(self):
        """The whole report as a dict: the object ``resim run --json`` prints."""
        if self._report is None:
            self._report = json.loads(self._inner.to_json())
        return self._report

    @property
    def summary(self):
        """The report's ``summary``: offered, successes, failures by reason, goodput, latency
        percentiles, amplification."""
        return self.report["summary"]

    @property
    def expectations(self):
        """Each expectation with its verdict (``passed``) and figures, as dicts."""
        return self.report["expectations"]

    def series(self):
        """One row per report bucket: the table ``resim run --format csv`` prints."""
        return from_csv(self._inner.to_csv())

    def services(self):
        """One row per service: the report's ``services``, nested figures as dotted columns."""
        return table([flat(s) for s in self.report["services"]])

    def calls(self):
        """One row per call site: the report's ``calls``, nested figures as dotted columns."""
        return table([flat(c) for c in self.report["calls"]])

    def clients(self):
        """One row per client: the report's ``clients``, nested figures as dotted columns."""
        return table([flat(c) for c in self.report["clients"]])

    def requests(self):
        """One row per client request the run kept whole (``Scenario.run(requests=SHARE)``):
        ``request`` (its id), ``trace_id``, ``client``, ``call``, ``target``, ``start_ns``,
        ``end_ns``, ``latency_ms``, ``outcome`` (``ok`` or why it failed), ``attempts`` (the
        client's), ``spans`` and ``in_flight`` (still under way when the run stopped), in the
        order they ended. These are the requests ``resim run --spans FILE --spans-sample
        SHARE`` writes as traces, chosen by their trace ids, so the same ones for the same seed
        and share. Not every request is kept unless asked: following a request whole costs
        memory and time in proportion to its steps, and a run of millions of requests would
        pay it for all. A ``ValueError`` when the run was not asked to keep any."""
        kept = self._inner.kept_requests()
        if kept is None:
            raise ValueError(
                "this run kept no request: run it with requests=SHARE (e.g. scenario.run(requests=0.1)) to keep that share"
            )
        return table([json.loads(line) for line in kept.splitlines()])

    def text(self):
        """The report as ``resim run`` prints it."""
        return self._inner.to_text()

    def charts(self):
        """The SVG charts ``resim run --svg DIR`` draws: ``{name: svg text}``."""
        return dict(self._inner.charts())

    def html(self):
        """The page ``resim run --html FILE`` writes."""
        return self._inner.to_html()

    def _repr_html_(self):
        # The page in an iframe, so that its styles stay its own inside a notebook.
        page = html.escape(self.html(), quote=True)
        return f'<iframe srcdoc="{page}" style="width:100%;height:640px;border:0"></iframe>'

    def __repr__(self):
        return repr(self._inner)


def _seeds(seeds):
    """``seeds`` as the extension module takes them: ``(first, last)`` for a range of
    consecutive seeds (as ``--seeds`` gives them, however long), else the list of seeds in
    their order. A ``ValueError`` for an empty one, or a seed that is negative, not a whole
    number or given twice."""
    if isinstance(seeds, range) and seeds.step == 1 and len(seeds) > 0 and seeds.start >= 0:
        return (seeds.start, seeds.stop - 1)
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds is an iterable of non-negative whole numbers, e.g. range(1, 65) or [3, 7, 11], not {seeds!r}")
    out = []
    seen = set()
    for s in seeds:
        if isinstance(s, bool):
            raise ValueError(f"a seed is a non-negative whole number, not {s!r}")
        try:
            seed = operator.index(s)
        except TypeError:
            raise ValueError(f"a seed is a non-negative whole number, not {s!r}") from None
        if seed < 0 or seed >= 2**64:
            raise ValueError(f"a seed is a whole number from 0 to 2**64 - 1, not {seed}")
        if seed in seen:
            raise ValueError(f"seed {seed} is given twice: give each seed once (a seed makes the same run each time)")
        seen.add(seed)
        out.append(seed)
    if not out:
        raise ValueError("seeds is empty: give at least one seed")
    return out


def _axis(path, values):
    if isinstance(values, str):
        return f"{path}={values}"
    return f"{path}={','.join(_ron(v) for v in values)}"


def sweep(scenario, seeds=range(1, 11), grid=None, jobs=None, duration=None, progress=None):
    """The runs of ``scenario`` for every seed of ``seeds`` at every point of ``grid``
    (``{path: [values]}``, or ``{path: "text as --grid takes it"}``), as ``resim sweep FILE
    --seeds A..B --grid …`` makes them: one row per run (``index``, ``point``, ``seed``,
    ``passed``, ``digest``, ``offered``, ``successes``, ``success_ratio``, ``goodput_per_s``,
    ``p99_ms``, ``amplification``, ``replay``), in the same order whatever ``jobs`` (threads;
    ``None``: one per core).

    ``seeds`` is any iterable of non-negative whole numbers: a ``range`` (with a step or
    not), a list, a numpy array. The runs are made in its order, each the run its seed makes
    alone; a seed given twice is refused (``ValueError``), since it would make the same run
    again. ``progress``: a bar of the runs done (``None``: when tqdm is installed and standard
    error is a terminal or a notebook; ``True``/``False`` to ask for it or not). The GIL is
    released while it runs; Ctrl-C stops it (``KeyboardInterrupt``)."""
    if not isinstance(scenario, Scenario):
        raise TypeError(f"sweep takes a Scenario from resim.load, not {type(scenario).__name__}")
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs is a number of threads, at least 1, not {jobs!r}")
    chosen = _seeds(seeds)
    axes = [_axis(path, values) for path, values in (grid or {}).items()]
    lines = _progress.running(
        progress,
        "runs",
        lambda update: _resim.sweep(scenario._inner, chosen, axes, jobs, _duration(duration), update),
    )
    return table([json.loads(line) for line in lines.splitlines()])
