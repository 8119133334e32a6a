"""resim from Python: deterministic simulations of resilience patterns.

The same operations as the ``resim`` command line, on the same library code, in Python's
idioms: ``load`` a scenario (a ``.ron`` file or a library name) with overrides, ``run`` it for
a seed, read its report as dicts and DataFrames, ``sweep`` it over seeds and a grid on all
cores; ``compare`` two scenarios, map their ``phase``, ``tune`` their settings, estimate a
``risk``. Runs, sweeps and experiments release the GIL, and Ctrl-C stops them within a fraction of a second
with ``KeyboardInterrupt``. Errors are ``ScenarioError``, with the command line's message and
its place (``file``, ``line``, ``column``, ``path``).

Tables are pandas DataFrames when pandas is installed, else lists of dicts (one per row, the
same keys): the package itself needs nothing but the standard library.
"""

from resim._api import Run, Scenario, library, load, sweep
from resim._experiments import (
    Comparison,
    PhaseMap,
    RiskEstimate,
    Tuning,
    compare,
    phase,
    risk,
    tune,
)
from resim._resim import ScenarioError

__all__ = [
    "Comparison",
    "PhaseMap",
    "RiskEstimate",
    "Run",
    "Scenario",
    "ScenarioError",
    "Tuning",
    "compare",
    "library",
    "load",
    "phase",
    "risk",
    "sweep",
    "tune",
]
__version__ = "0.1.0"
