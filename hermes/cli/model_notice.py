"""The one-line notice for a model no profile row knows: the request still goes out, with the
defaults, so a typo would otherwise pass silently until the provider answers 404."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..routing.models import ProfileRow, example_id, matching_rows, model_key

__all__ = ["unprofiled"]


def _known_ids(rows: Sequence[ProfileRow]) -> list[str]:
    """An example id per profile glob (``*claude-opus-4[-.]5`` → ``claude-opus-4-5``): what a
    did-you-mean can point at. Globs too loose to name a model (``--``, a trailing ``-``) are left out."""
    ids = {example_id(g) for row in rows for g in row.models}
    return sorted(i for i in ids if len(i) > 3 and "--" not in i and not i.endswith(("-", ".")))


def unprofiled(model: str, rows: Sequence[ProfileRow]) -> str:
    """``""`` when a profile row matches ``model``; else the notice, with a did-you-mean when close."""
    if not model or matching_rows(model, rows):
        return ""
    close = difflib.get_close_matches(model_key(model), _known_ids(rows), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"note: {model} is not in the model profiles; the defaults apply{hint}"
