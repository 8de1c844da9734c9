"""The request matrix's cells as HTML, built here rather than in the template.

A long session draws tens of thousands of cells; through the template engine each costs tens
of microseconds (about a second a page), here about one. Every value is escaped with
``markupsafe.escape`` and reasons also pass ``errors.redact``, exactly like template output.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from ..core.errors import redact
from .data import Column

__all__ = ["row_cells"]


def row_cells(columns: Sequence[Column], seq: int) -> Markup:
    """The ``<td>`` elements of one assistant turn's row: one per carrier of each column."""
    out: list[str] = []
    for c in columns:
        row = c.cells.get(seq, {})
        req = escape(c.n)
        if not c.carriers:
            out.append(f'<td class="{"switch" if c.switch else ""}" data-req="{req}"></td>')
            continue
        for i, carrier in enumerate(c.carriers):
            cls = "switch" if i == 0 and c.switch else ""
            cell = row.get(carrier)
            if cell is not None:
                action = escape(cell.action)
                inner = f'<span class="chip a-{action}" title="{escape(redact(cell.reason))}">{action}</span>'
            else:
                inner = '<span class="muted">·</span>' if seq in c.sent else ""
            out.append(f'<td class="{cls}" data-req="{req}" data-carrier="{escape(carrier)}">{inner}</td>')
    return Markup("".join(out))
