"""Tables: a pandas DataFrame when pandas can be imported, else a list of dicts (one per
row). Both hold the same rows, columns and values, so code written against the records works
on the DataFrame's ``to_dict("records")``."""

import csv
import io


def table(rows):
    """``rows`` (a list of flat dicts) as a DataFrame, or as they are without pandas."""
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame.from_records(rows)


def flat(record, prefix=""):
    """A JSON object with its nested objects flattened into dotted keys
    (``{"latency_ms": {"p99": 3}}`` becomes ``{"latency_ms.p99": 3}``); lists stay as they
    are."""
    out = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def number(text):
    """A CSV cell as the number it writes (``None`` for an empty cell)."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def from_csv(text):
    """The CSV ``resim run --format csv`` prints, as a table."""
    try:
        import pandas
    except ImportError:
        reader = csv.DictReader(io.StringIO(text))
        return [{k: number(v) for k, v in row.items()} for row in reader]
    return pandas.read_csv(io.StringIO(text))
