"""Buffered line output shared by the renderers: stdout lines written as UTF-8 in large chunks,
stderr lines written at once (after flushing stdout, so a terminal shows them in order)."""

from __future__ import annotations


class LineOutput:
    def __init__(self, out, err, flush_lines: int = 4096):
        self.out = out  # binary streams
        self.err = err
        self.flush_lines = flush_lines
        self._lines: list[str] = []

    def emit(self, line: str) -> None:
        self._lines.append(line)
        if len(self._lines) >= self.flush_lines:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self._lines.append("")
            self.out.write("\n".join(self._lines).encode("utf-8", "surrogateescape"))
            self._lines = []
        self.out.flush()

    def stderr(self, line: str) -> None:
        self.flush()
        self.err.write((line + "\n").encode("utf-8", "surrogateescape"))
        self.err.flush()
