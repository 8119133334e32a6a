"""The progress bar of a sweep, a comparison, a phase map, a tune or a risk estimate: tqdm's,
when tqdm is installed (the optional extra ``resim[progress]``). The runs go on with the GIL
released; the extension module calls ``update(done, total)`` from the calling thread about
every 50 ms, between its looks at Ctrl-C, so drawing the bar never holds the GIL while a run
goes on.

``progress=None`` (the default) shows the bar where someone is watching: tqdm installed, and
standard error a terminal or the code running in a Jupyter kernel. Tests, pipes and logs get
none, as ``resim sweep`` draws its bar only on a terminal. ``True`` asks for it (an
``ImportError`` that says how to install tqdm when it is missing), ``False`` for none."""

import sys


def _in_notebook():
    """Whether the code runs in a Jupyter kernel (where standard error is no terminal)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython() if hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def bar(progress, what):
    """An ``update(done, total)`` callable drawing a bar of ``what`` (``"runs"``), with a
    ``close()``; ``None`` when no bar is to be drawn."""
    if progress is False:
        return None
    if progress is not None and progress is not True:
        raise TypeError(f"progress is True, False or None (a bar where someone watches), not {progress!r}")
    tqdm = _tqdm()
    if tqdm is None:
        if progress:
            raise ImportError("progress=True draws its bar with tqdm: pip install tqdm (or './python[progress]')")
        return None
    if progress is None and not (sys.stderr.isatty() or _in_notebook()):
        return None
    return _Bar(tqdm(total=0, unit=what, leave=False))


class _Bar:
    """A tqdm bar updated from the counts of runs done and asked for."""

    def __init__(self, shown):
        self.shown = shown

    def __call__(self, done, total):
        if total != self.shown.total:
            self.shown.total = total
            self.shown.refresh()
        if done > self.shown.n:
            self.shown.update(done - self.shown.n)

    def close(self):
        self.shown.close()


def running(progress, what, call):
    """``call(update)`` with the bar ``progress`` asks for (``update`` is ``None`` without
    one), the bar closed however the call ends."""
    update = bar(progress, what)
    try:
        return call(update)
    finally:
        if update is not None:
            update.close()
