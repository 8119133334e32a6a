"""resim from Python: deterministic simulations of resilience patterns.

Typed stubs of the public API (the implementation is ``resim/_api.py`` over the extension
module ``resim._resim``). Tables are pandas DataFrames when pandas is installed, else lists of
dicts: ``Table`` stands for either.
"""

import datetime
import os
from typing import Any, Mapping, Sequence, Union

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
    ) -> Run:
        """One run, as ``resim run FILE --seed SEED --duration D --max-events N``: the same
        digest and figures. Releases the GIL; Ctrl-C raises ``KeyboardInterrupt``."""

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
    seeds: range = ...,
    grid: Mapping[str, Union[str, Sequence[Value]]] | None = None,
    jobs: int | None = None,
    duration: Duration | None = None,
) -> Table:
    """The runs of ``scenario`` for each seed of ``seeds`` (consecutive; default 1 to 10) at
    each point of ``grid``, as ``resim sweep`` makes them, on ``jobs`` threads (``None``: one
    per core): one row per run with the keys of ``resim sweep --out FILE.jsonl``, in index
    order whatever ``jobs``. Releases the GIL; Ctrl-C raises ``KeyboardInterrupt``."""
