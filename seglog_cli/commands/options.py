"""Option parsing shared by the commands."""

from __future__ import annotations

from datetime import datetime, timezone

from seglog_cli.status import UsageError


def parse_timestamp(text: str | None, option: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC when no zone is given)."""
    if text is None:
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{option}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)
