"""A table whose columns follow the screen's width: cleared, and its columns set again only when
the wanted ones changed (a redraw at the same width keeps them, and the cursor's column)."""

from __future__ import annotations

from textual.widgets import DataTable


def clear_with_columns(table: DataTable[str], wanted: tuple[str, ...], shown: tuple[str, ...]) -> tuple[str, ...]:
    """Empty `table` for new rows under `wanted`; returns the columns now shown."""
    table.clear(columns=wanted != shown)
    if wanted != shown:
        for column in wanted:
            table.add_column(column, key=column)
    return wanted
