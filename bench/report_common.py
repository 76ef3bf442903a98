"""What the report's sections share (bench/report.py and its section modules)."""


def find(rows, **match):
    for row in rows:
        if all(row.get(k) == v for k, v in match.items()):
            return row
    return None


def section(title, intro, columns):
    """A report section's opening lines: heading, what it measures, table header."""
    return [f"## {title}", "", intro, "", "| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]


def fmt(value, digits=2):
    return "–" if value is None else f"{value:.{digits}f}"
