"""resim from Python: deterministic simulations of resilience patterns.

The same operations as the ``resim`` command line, on the same library code, in Python's
idioms: ``load`` a scenario (a ``.ron`` file or a library name) with overrides, ``run`` it for
a seed, read its report as dicts and DataFrames, ``sweep`` it over seeds and a grid on all
cores. Runs and sweeps release the GIL, and Ctrl-C stops them within a fraction of a second
with ``KeyboardInterrupt``. Errors are ``ScenarioError``, with the command line's message and
its place (``file``, ``line``, ``column``, ``path``).

Tables are pandas DataFrames when pandas is installed, else lists of dicts (one per row, the
same keys): the package itself needs nothing but the standard library.
"""

from resim._api import Run, Scenario, library, load, sweep
from resim._resim import ScenarioError

__all__ = ["Run", "Scenario", "ScenarioError", "library", "load", "sweep"]
__version__ = "0.1.0"
