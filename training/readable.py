"""Figures as text a person reads in a terminal: tables and ``name value`` lines instead of raw dictionaries.

Files keep their JSON (history.json, report.json, ``--out``); only what the
commands print goes through here.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def number(value: Any) -> str:
    """A figure as text: floats to four significant digits (large ones whole), None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def record_line(record: Mapping[str, Any]) -> str:
    """One record (an epoch, an update, an iteration) as ``first value: name value, name value, ...``."""
    items = [(name, value) for name, value in record.items() if not isinstance(value, (Mapping, list))]
    if not items:
        return ""
    (first, first_value), rest = items[0], items[1:]
    return f"{first} {number(first_value)}: " + ", ".join(f"{name} {number(value)}" for name, value in rest)


def figures_text(figures: Any) -> str:
    """Nested figures as indented ``name: value`` lines; rows of flat figures with the same names as a table."""
    return "\n".join(_lines(figures, 0))


def _is_flat(value: Any) -> bool:
    return isinstance(value, Mapping) and all(not isinstance(v, (Mapping, list)) for v in value.values())


def _lines(figures: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(figures, list) and figures and all(_is_flat(row) for row in figures):
        return [pad + line for line in _table([("", row) for row in figures])]
    if isinstance(figures, Mapping) and figures and all(_is_flat(v) for v in figures.values()):
        return [pad + line for line in _table(list(figures.items()))]
    if isinstance(figures, Mapping):
        lines = []
        for name, value in figures.items():
            if isinstance(value, list) and not any(isinstance(item, (Mapping, list)) for item in value):
                lines.append(f"{pad}{name}: {', '.join(number(item) for item in value) or '-'}")
            elif isinstance(value, (Mapping, list)):
                lines.extend([f"{pad}{name}:", *_lines(value, indent + 2)] if value else [f"{pad}{name}: -"])
            else:
                lines.append(f"{pad}{name}: {number(value)}")
        return lines
    if isinstance(figures, list):
        return [line for item in figures for line in _lines(item, indent)]
    return [pad + number(figures)]


def _table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Rows (label, flat figures) as aligned columns, one per figure name in order of first appearance: numbers
    to the right, text to the left."""
    names: list[str] = []
    for _, row in rows:
        names.extend(name for name in row if name not in names)
    columns = [[label for label, _ in rows]] if any(label for label, _ in rows) else []
    columns += [[row.get(name) for _, row in rows] for name in names]
    headers = [""] * (len(columns) - len(names)) + names
    lines = [[] for _ in range(len(rows) + 1)]
    for header, values in zip(headers, columns):
        numeric = all(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
                      for value in values)
        cells = [header, *(number(value) for value in values)]
        width = max(len(cell) for cell in cells)
        for line, cell in zip(lines, cells):
            line.append(cell.rjust(width) if numeric else cell.ljust(width))
    return ["  ".join(line).rstrip() for line in lines]
