"""Text read from disk (file and directory names, messages quoting them) made safe to show.

``printable`` (engine) turns control characters into escapes for every human-readable line;
``markup_literal`` also escapes rich markup, for text passed to a rich ``Table``, ``Progress``
or ``Console.print``: a partition named ``x-[bold]0`` or a message quoting ``[/]`` is printed
as it is instead of styling the output or failing with a ``MarkupError``.
"""

from __future__ import annotations

from seglog_cli.storage.log.text import printable


def markup_literal(text: object) -> str:
    from rich.markup import escape  # here: only output that rich draws needs it (and rich itself)

    return escape(printable(str(text)))


__all__ = ["markup_literal", "printable"]
