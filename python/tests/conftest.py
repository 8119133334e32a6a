"""What the tests share: where the repository is, the `resim` binary to compare with, and a
short library scenario to run."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

# A library scenario of about 24,000 events (one service, `api`): a run takes milliseconds.
SHORT = "client-errors"


def resim_binary():
    """The `resim` binary to compare with: $RESIM_BIN (CI names the one `cargo test` built,
    so a missing binary fails there), else one built in target/, else None."""
    named = os.environ.get("RESIM_BIN")
    if named:
        return named
    for profile in ("release", "debug"):
        path = REPO / "target" / profile / "resim"
        if path.exists():
            return str(path)
    return None


@pytest.fixture
def cli():
    """Runs `resim ARGS…` and gives (exit code, stdout, stderr); skips where no binary is built
    and RESIM_BIN names none."""
    binary = resim_binary()
    if binary is None:
        pytest.skip("no resim binary: build one with `cargo build -p scenarios` or name it in RESIM_BIN")

    def run(*args, cwd=None):
        done = subprocess.run([binary, *args], capture_output=True, text=True, cwd=cwd)
        return done.returncode, done.stdout, done.stderr

    return run
