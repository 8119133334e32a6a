"""resim from Python: deterministic simulations of resilience patterns.

Typed stubs of the public API (the implementation is ``resim/_api.py`` over the extension
module ``resim._resim``). Tables are pandas DataFrames when pandas is installed, else lists of
dicts: ``Table`` stands for either.
"""

import datetime
import os
from typing import Any, Iterable, Mapping, Sequence, SupportsIndex, Union

Table = Any
"""A pandas ``DataFrame`` when pandas is installed, else ``list[dict[str, Any]]``."""

Value = Union[str, int, float, bool]
"""A setting's value: a string as ``--set`` takes it (RON; a duration or a rate may go without
quotes), or a number or a bool as Python writes it."""

Duration = Union[str, datetime.timedelta]
"""A duration as ``--duration`` takes it (``"30s"``, ``"2m"``), or a ``timedelta``."""

__version__: str

class ScenarioError(Exception):
    """A scenario that cannot be read, applied or run: ``str(e)`` is the line the command line
    prints (exit code 2), with its place."""

    message: str
    """The message, as ``resim`` prints it."""
    file: str
    """The file or library name as given."""
    line: int | None
    """1-based line of a syntax error or of a variant's value; ``None`` otherwise."""
    column: int | None
    """1-based column, where ``line`` is given."""
    path: str | None
    """The field path of a value that parses but cannot run (``services.api.workers``), or
    within a variant; ``None`` otherwise."""

def library() -> list[tuple[str, str]]:
    """The library scenarios in ``resim list`` order: ``(name, description)``."""

def load(
    path_or_name: Union[str, "os.PathLike[str]"],
    set: Mapping[str, Value] | None = None,
    variant: str | None = None,
) -> Scenario:
    """Reads a ``.ron`` file, else the library scenario of that name, as ``resim run`` does;
    every variant of the file checked, then ``variant`` and the ``set`` overrides
    (``{path: value}``, in order, as ``--set path=value``) applied and validated.

    Raises ``ScenarioError``."""

class Scenario:
    """A scenario read, overridden and validated."""

    @property
    def name(self) -> str:
        """The scenario's ``name`` field."""
    @property
    def file(self) -> str:
        """The file or library name as given to ``load``."""
    @property
    def seed(self) -> int:
        """The scenario's own seed, which ``run`` uses when given none."""
    @property
    def variants(self) -> list[str]:
        """The names of the file's variants."""
    def run(
        self,
        seed: int | None = None,
        duration: Duration | None = None,
        max_events: int | None = None,
        requests: float | bool | None = None,
    ) -> Run:
        """One run, as ``resim run FILE --seed SEED --duration D --max-events N``: the same
        digest and figures. ``requests``: the share of the client requests (0 to 1, ``True``:
        all) kept whole for ``Run.requests()``, as ``--spans-sample`` chooses them; ``None``
        keeps none. Releases the GIL; Ctrl-C raises ``KeyboardInterrupt``."""

class Run:
    """One run's report."""

    @property
    def digest(self) -> str:
        """The run's digest, as ``resim run`` prints it."""
    @property
    def seed(self) -> int:
        """The seed the run used."""
    @property
    def events(self) -> int:
        """Events executed."""
    @property
    def stop_reason(self) -> str:
        """``time_limit``, ``event_budget``, ``memory_limit`` or ``no_events``."""
    @property
    def passed(self) -> bool:
        """Whether every expectation held."""
    @property
    def replay(self) -> str:
        """The command that replays this run."""
    @property
    def report(self) -> dict[str, Any]:
        """The object ``resim run --json`` prints."""
    @property
    def summary(self) -> dict[str, Any]:
        """The report's ``summary``."""
    @property
    def expectations(self) -> list[dict[str, Any]]:
        """Each expectation with its verdict and figures."""
    def series(self) -> Table:
        """One row per report bucket: the CSV ``resim run --format csv`` prints."""
    def services(self) -> Table:
        """One row per service, nested figures as dotted columns."""
    def calls(self) -> Table:
        """One row per call site, nested figures as dotted columns."""
    def clients(self) -> Table:
        """One row per client, nested figures as dotted columns."""
    def requests(self) -> Table:
        """One row per request the run kept (``Scenario.run(requests=SHARE)``), the ones
        ``resim run --spans --spans-sample SHARE`` writes: ``request``, ``trace_id``,
        ``client``, ``call``, ``target``, ``start_ns``, ``end_ns``, ``latency_ms``,
        ``outcome``, ``attempts``, ``spans``, ``in_flight``. ``ValueError`` when it kept
        none."""
    def text(self) -> str:
        """The report as ``resim run`` prints it."""
    def charts(self) -> dict[str, str]:
        """The SVG charts ``resim run --svg DIR`` draws: ``{name: svg}``."""
    def html(self) -> str:
        """The page ``resim run --html FILE`` writes."""
    def _repr_html_(self) -> str:
        """The page in an ``iframe``, for notebooks."""

def sweep(
    scenario: Scenario,
    seeds: Iterable[SupportsIndex] = ...,
    grid: Mapping[str, Union[str, Sequence[Value]]] | None = None,
    jobs: int | None = None,
    duration: Duration | None = None,
    progress: bool | None = None,
) -> Table:
    """The runs of ``scenario`` for each seed of ``seeds`` (any iterable of non-negative whole
    numbers, in its order; default 1 to 10; a seed given twice raises ``ValueError``) at each
    point of ``grid``, as ``resim sweep`` makes them, on ``jobs`` threads (``None``: one per
    core): one row per run with the keys of ``resim sweep --out FILE.jsonl``, in index order
    whatever ``jobs``. ``progress``: a tqdm bar (``None``: when tqdm is installed and standard
    error is a terminal or a notebook). Releases the GIL; Ctrl-C raises
    ``KeyboardInterrupt``."""

Seeds = range
"""A range of consecutive seeds (``range(1, 21)``), as ``--seeds 1..20`` gives them."""

Axis = Union[str, tuple[str, Union[str, Sequence[Value]]]]
"""An axis as ``--x``, ``--y`` or ``--param`` take it (``"path=8,16"``, ``"path=8..32:8"``),
or a ``(path, values)`` pair."""

class Comparison:
    """``resim compare``: two scenarios on the same seeds and their paired differences."""

    data: dict[str, Any]
    """The object ``resim compare --format json`` prints."""
    text: str
    """The table ``resim compare`` prints."""
    def table(self) -> Table:
        """One row per figure: each side's mean, sd and count, the paired difference, its 95%
        interval (``interval.low``, ``interval.high``) and ``significant``."""

def compare(
    a: Scenario,
    b: Scenario,
    seeds: Seeds | None = None,
    duration: Duration | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
) -> Comparison:
    """Runs ``a`` and ``b`` on the same seeds (``None``: 1 to 20) and compares them, as
    ``resim compare``; ``progress``: a bar of both sides' runs. Releases the GIL; Ctrl-C
    raises ``KeyboardInterrupt``."""

class PhaseMap:
    """``resim phase``: stable, metastable or collapsed over two axes."""

    data: dict[str, Any]
    """The object ``resim phase --format json`` prints."""
    text: str
    """The table ``resim phase`` prints."""
    svg: str
    """The heat map ``resim phase --svg FILE`` draws."""
    def table(self) -> Table:
        """One row per cell: ``x``, ``y``, the runs by class, P(metastable)'s interval."""

def phase(
    scenario: Scenario,
    x: Axis,
    y: Axis,
    seeds: Seeds | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
) -> PhaseMap:
    """The phase map of ``scenario`` over ``x`` and ``y`` (``None`` seeds: 1 to 5), as ``resim
    phase``. Releases the GIL; Ctrl-C raises ``KeyboardInterrupt``."""

class Tuning:
    """``resim tune``: the race, the margins when asked, the recommendation."""

    text: str
    """What ``resim tune`` prints."""
    passed: bool
    """Whether a candidate met the requirement (``resim tune``'s exit code 0)."""
    recommendation: dict[str, Any] | None
    """The recommended candidate: ``candidate``, ``settings`` (``{path: value}``), ``words``,
    ``runs``, ``passed``, ``cost``, ``margin``, ``tied``, ``tie``, ``rule``, ``by_order``;
    ``None`` when no candidate meets the requirement."""
    def runs(self) -> Table:
        """Every run and stress level tried: the lines of ``resim tune --out FILE``."""

def tune(
    scenario: Scenario,
    params: Mapping[str, Union[str, Sequence[Value]]],
    seeds: Seeds | None = None,
    budget: int | None = None,
    pass_rate: float | None = None,
    minimize: str | None = None,
    maximize_margin: bool = False,
    stress: str | None = None,
    margin_at_least: str | None = None,
    margin_seeds: int | None = None,
    margin_seeds_max: int | None = None,
    threshold: float | None = None,
    confidence: float | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
) -> Tuning:
    """Races the candidates of ``params`` (``{path: [values]}``) as ``resim tune``; the other
    arguments are its flags (``None``: their defaults). Releases the GIL; Ctrl-C raises
    ``KeyboardInterrupt``."""

class RiskEstimate:
    """``resim risk``: the probability of an event within a horizon."""

    data: dict[str, Any]
    """The object ``resim risk --json`` prints: ``probability``, ``low``, ``high``,
    ``method``, ``reason``, ``runs``, ``hits``, ``replay``, …"""
    text: str
    """What ``resim risk`` prints."""

def risk(
    scenario: Scenario,
    event: str,
    horizon: Duration,
    seeds: Seeds | None = None,
    budget: str | None = None,
    method: str | None = None,
    importance: str | None = None,
    particles: int | None = None,
    replications: int | None = None,
    rel_error: float | None = None,
    jobs: int | None = None,
    progress: bool | None = None,
) -> RiskEstimate:
    """The probability of ``event`` within ``horizon``, as ``resim risk --json``; the other
    arguments are its flags (``None``: their defaults). ``progress``: a bar of the pilot's
    plain runs, then the plan's runs or replications. Releases the GIL; Ctrl-C raises
    ``KeyboardInterrupt``."""
