"""The book's chapter "resim from Python" (book/src/python.md) shows what its code prints.

Its ```python blocks run in order, in one namespace, in a fresh directory (the files they write
go there); the ```text block right after a block is what the block prints. A drifted block
fails; `UPDATE_BOOK=1 pytest python/tests/test_book.py` rewrites the text blocks in place, as
`UPDATE_BOOK=1 cargo test -p scenarios --test suite book::` does for the other chapters.
"""

import contextlib
import io
import os
import re

import pytest

from conftest import REPO

CHAPTER = REPO / "book/src/python.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def blocks(text):
    """Each fenced block: (language, body, start and end offsets of its body)."""
    return [(m.group(1), m.group(2), m.start(2), m.end(2), m.end()) for m in FENCE.finditer(text)]


def test_the_chapters_examples_print_what_it_shows(tmp_path, monkeypatch):
    # The tables printed are pandas' (the version CI installs, pinned).
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    text = CHAPTER.read_text()
    found = blocks(text)
    namespace = {}
    replaced = []
    drifted = []
    for k, (language, body, _, end, after) in enumerate(found):
        if language != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(body, f"{CHAPTER}:{text.count(chr(10), 0, end)}", "exec"), namespace)
        following = found[k + 1] if k + 1 < len(found) else None
        if following is None or following[0] != "text" or text[after:following[2]].strip() != "```text":
            continue
        if following[1] != printed.getvalue():
            drifted.append(f"{CHAPTER}: the block before offset {following[2]} prints:\n{printed.getvalue()}")
            replaced.append((following[2], following[3], printed.getvalue()))
    # The files the plot example writes are real.
    assert (tmp_path / "traffic.svg").read_text().startswith("<svg")
    assert (tmp_path / "run.html").read_text().startswith("<!DOCTYPE html>")
    if replaced and os.environ.get("UPDATE_BOOK"):
        for start, end, shown in reversed(replaced):
            text = text[:start] + shown + text[end:]
        CHAPTER.write_text(text)
        return
    assert not drifted, "\n".join(drifted) + "\n(UPDATE_BOOK=1 rewrites them)"


def test_every_python_block_is_run():
    # A block in another fence, or a text block not right after the code, would go unchecked.
    text = CHAPTER.read_text()
    languages = [language for language, *_ in blocks(text)]
    assert languages.count("python") == 7
    assert all(language in ("python", "text", "sh") for language in languages)
