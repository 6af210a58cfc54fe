"""Buffered line output shared by the renderers: stdout lines (UTF-8 bytes) written in chunks of
about a megabyte, stderr lines written at once (after flushing stdout, so a terminal shows them
in order). A "line" may be several lines already joined (the compiled formatter's blocks)."""

from __future__ import annotations

from seglog_cli.storage.log.text import printable

FLUSH_BYTES = 1 << 20


class LineOutput:
    def __init__(self, out, err, flush_lines: int = 4096):
        self.out = out  # binary streams
        self.err = err
        self.flush_lines = flush_lines
        self._lines: list[bytes] = []
        self._bytes = 0

    def emit(self, line: bytes) -> None:
        if len(line) >= FLUSH_BYTES:  # a block of lines formatted at once: written as it is, not
            if self._lines:           # copied into a join (hundreds of MB in a deep dump)
                self._lines.append(b"")
                self.out.write(b"\n".join(self._lines))
                self._lines = []
                self._bytes = 0
            self.out.write(line)
            self.out.write(b"\n")
            return
        self._lines.append(line)
        self._bytes += len(line)
        if self._bytes >= FLUSH_BYTES or len(self._lines) >= self.flush_lines:
            self.flush()

    def text(self, line: str) -> None:
        self.emit(line.encode("utf-8", "surrogateescape"))

    def flush(self) -> None:
        if self._lines:
            self._lines.append(b"")
            self.out.write(b"\n".join(self._lines))
            self._lines = []
            self._bytes = 0
        self.out.flush()

    def stderr(self, line: str) -> None:
        self.flush()
        self.err.write((printable(line) + "\n").encode("utf-8", "surrogateescape"))
        self.err.flush()
