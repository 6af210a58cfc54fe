"""Rendering the start-up preview (``storage.metadata.startup``) for ``seglog verify`` and
``seglog recover``: a block of text lines per broker, or a JSON list under ``startupPreview``.

Text::

    Start-up preview of broker 3 (log dir /data/kafka) against /ctl/__cluster_metadata-0 up to offset 702, ...
      kept     ledger-0    resumes from offset 94
      stray    ledger-2    the current replica assignment [1, 2] does not contain the local brokerId 3 (PARTITION_CHANGE_RECORD at offset 140)
      created  alerts-0    empty, fetched from the leader (topic id 9VVEswOgQkKtZFU_3nNKdg, PARTITION_RECORD at offset 133)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from seglog_cli.render import fit
from seglog_cli.storage.log.text import printable

if TYPE_CHECKING:  # the metadata engine (and construct) loads only when a preview is made
    from seglog_cli.storage.metadata.startup import StartupPreview

KEPT, STRAY, CREATED = "kept", "stray", "created"  # storage.metadata.startup's outcomes


def render_text(previews: list["StartupPreview"], out: TextIO, width: int | None = None,
                show_kept: bool = True) -> None:
    """One line each (stable for grep), or wrapped between words to ``width`` columns (a path,
    a name or an offset never broken). ``show_kept``: list the kept dirs (else only counted,
    except one outside its assigned directory)."""
    for preview in previews:
        for line in _lines(preview, show_kept):
            for piece in [line] if width is None else fit.paragraph(line, width):
                out.write(piece + "\n")


def _lines(preview: "StartupPreview", show_kept: bool) -> list[str]:
    dirs = ", ".join(printable(str(d)) for d in preview.log_dirs)
    label = "log dir" if len(preview.log_dirs) == 1 else "log dirs"
    lines = [f"Start-up preview of broker {preview.broker_id} ({label} {dirs}) against "
             f"{printable(preview.source_text)}"]
    if preview.own_copy:
        lines.append(f"  (the broker's own copy: the restart first catches up past offset {preview.end_offset}; "
                     "--metadata-log DIR names a current one)")
    width = max((len(o.name) for o in preview.outcomes), default=0)
    for outcome in preview.outcomes:
        if outcome.outcome == KEPT and not show_kept and not outcome.wrong_directory:
            continue
        lines.append(f"  {outcome.outcome:<8} {printable(outcome.name):<{width}}  {_what(preview, outcome)}")
    counts = {kind: len(preview.of(kind)) for kind in (KEPT, STRAY, CREATED)}
    hint = "" if show_kept or not counts[KEPT] else " (--show info lists the kept ones)"
    lines.append(f"  {counts[KEPT]} kept, {counts[STRAY]} marked stray, {counts[CREATED]} created{hint}")
    return lines


def _what(preview: "StartupPreview", outcome) -> str:
    by = "" if outcome.decided_by is None else outcome.decided_by.text()
    if outcome.outcome == STRAY:
        return (f"{outcome.kafka_reason(preview.broker_id)}" + (f" ({by})" if by else "")
                + f"; renamed {outcome.name}.<uuid>-stray")
    if outcome.outcome == CREATED:
        return f"empty, fetched from the leader (topic id {outcome.topic_id}" + (f", {by})" if by else ")")
    text = f"resumes from offset {outcome.resume_offset}"
    if outcome.wrong_directory:
        text += f"; assigned to directory {outcome.assigned_directory}, sits in {outcome.directory_id}"
    return text


def json_fields(previews: list["StartupPreview"]) -> dict:
    return {"startupPreview": [preview.as_dict() for preview in previews]} if previews else {}
