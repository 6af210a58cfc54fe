"""Remote URLs on the command line: the one place they are turned into local views and back.

Before a command runs, every argument that is a URL (``s3://``, ``s3a://``, ``gs://``,
``abfs://``, ``abfss://``, ``hdfs://``; also ``--opt=URL`` and ``--files a,b`` lists) is replaced
by its path in a :class:`~seglog_cli.storage.objectstore.remote_view.RemoteView`, and ``file://`` URLs by
their local path. While the command runs, stdout and stderr go through a writer that puts the URL
back wherever a view path is written (file lines, JSON ``path`` fields, findings, errors), so no
output ever shows the temporary view. A command that writes refuses a remote URL before
anything is listed (exit status 6, as for tiered storage).
"""

from __future__ import annotations

import io
import sys

from seglog_cli.status import ExitStatus
from seglog_cli.storage.objectstore.remote_urls import is_remote, local_path, url_scheme

# the commands that read only; the others write (simulate-retention writes with --apply)
READ_COMMANDS = {"dump", "verify", "offsets", "transactions", "simulate-retention", "diff", "replay", "metadata"}


# options whose value is never a path (``--spark spark://host:7077`` is a Spark master URL)
# options whose value is never a path: a value that happens to hold "://" (a --value, a --config
# value, a mistyped --at) is left to the command's own parsing, never fetched as a URL
NOT_PATHS = ("--spark", "--bootstrap-server", "--at", "--now", "--from-timestamp", "--to-timestamp", "--timestamp", "--config",
             "--value", "--key", "--header", "--key-separator")


def may_hold_paths(argv: list[str]) -> list[bool]:
    """For each word of ``argv``: whether it can name a path (False for the value of an option
    of :data:`NOT_PATHS`, given as ``--spark X`` or ``--spark=X``)."""
    out, after_option = [], False
    for word in argv:
        if after_option:
            out.append(False)
            after_option = False
        elif word in NOT_PATHS:
            out.append(False)
            after_option = True
        else:
            out.append(not any(word.startswith(option + "=") for option in NOT_PATHS))
    return out


def remote_urls(argv: list[str]) -> list[str]:
    """The remote URLs ``argv`` names as paths (not ``file://``, not an option's value that is
    no path)."""
    return [part for word, paths in zip(argv, may_hold_paths(argv)) if paths for part in _parts(word)[1]
            if is_remote(part)]


def _parts(word: str) -> tuple[str, list[str]]:
    """``(option prefix, values)`` of an argument: ``--remote=s3://a`` -> ``("--remote=", [...])``;
    a comma list of URLs (``--files a,b``) gives each."""
    prefix = ""
    if word.startswith("--") and "=" in word:
        at = word.index("=") + 1
        prefix, word = word[:at], word[at:]
    values = word.split(",") if "," in word and "://" in word else [word]
    return prefix, values


def refusal(command: str | None, argv: list[str]) -> str | None:
    """The one-line refusal for a writing command given a remote URL, else None."""
    writes = command not in READ_COMMANDS or (command == "simulate-retention" and "--apply" in argv)
    if not writes:
        return None
    urls = remote_urls(argv)
    if not urls:
        return None
    url = urls[0]
    return (f"seglog: {url}: is remote storage ({url_scheme(url)}://): seglog reads remote log dirs and never "
            "writes them; nothing was changed")


def run_with_views(argv: list[str], command: str | None, run) -> int:
    """Run ``run(local_argv)`` with the URLs of ``argv`` replaced by view paths and the view
    paths of its output mapped back; the view is removed afterwards."""
    refused = refusal(command, argv)
    if refused is not None:
        print(refused, file=sys.stderr)
        return ExitStatus.CANNOT_WRITE
    paths = may_hold_paths(argv)
    if not remote_urls(argv):
        return run([_local_word(word) if path else word for word, path in zip(argv, paths)])
    from seglog_cli.storage.log.errors import SeglogError
    from seglog_cli.render import fit
    from seglog_cli.storage.objectstore.remote_view import RemoteView

    view = RemoteView()
    stdout, stderr = sys.stdout, sys.stderr
    fit.DISPLAY.append(view.to_url)  # tables laid out for the URLs, not the view's paths
    try:
        sys.stdout, sys.stderr = _mapped_text(stdout, view), _mapped_text(stderr, view)
        try:
            local_argv = [_view_word(word, view) if path else word for word, path in zip(argv, paths)]
        except SeglogError as exc:
            print(f"seglog: {exc}", file=sys.stderr)
            return ExitStatus.UNREADABLE
        return run(local_argv)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
                stream.buffer.finish()
            except (OSError, ValueError, AttributeError):
                pass
        sys.stdout, sys.stderr = stdout, stderr
        fit.DISPLAY.remove(view.to_url)
        view.close()


def _local_word(word: str) -> str:
    prefix, values = _parts(word)
    return prefix + ",".join(local_path(value) for value in values)


def _view_word(word: str, view) -> str:
    prefix, values = _parts(word)
    return prefix + ",".join(str(view.add(value)) if is_remote(value) else local_path(value) for value in values)


class _UrlWriter(io.BufferedIOBase):
    """Bytes written through it reach ``target`` with view paths replaced by their URLs. The
    bytes that could be the start of a view path are held until the next write (or
    :meth:`finish`), so a path split across two writes is still replaced."""

    def __init__(self, target, view):
        super().__init__()
        self._target, self._view = target, view
        self._held = b""

    def _pairs(self):
        return [(prefix.encode(), url.encode()) for prefix, url in self._view.prefixes]

    def write(self, data) -> int:
        written = len(data)
        data = self._held + bytes(data)
        pairs = self._pairs()
        hold = 0
        longest = max((len(prefix) for prefix, _ in pairs), default=0)
        for size in range(min(longest - 1, len(data)), 0, -1):
            tail = data[-size:]
            if any(prefix.startswith(tail) for prefix, _ in pairs):
                hold = size
                break
        body, self._held = (data[:-hold], data[-hold:]) if hold else (data, b"")
        for prefix, url in pairs:
            body = body.replace(prefix, url)
        self._target.write(body)
        return written

    def finish(self) -> None:
        held, self._held = self._held, b""
        if held:
            self._target.write(held)
        self._target.flush()

    def flush(self) -> None:
        self._target.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()


def _mapped_text(stream, view):
    binary = getattr(stream, "buffer", None)
    if binary is None:
        return stream
    return io.TextIOWrapper(_UrlWriter(binary, view), encoding=stream.encoding, errors=stream.errors,
                            line_buffering=stream.line_buffering, write_through=True)
