"""The shape of a docs page, read from its Markdown: paragraphs, list items, headings, code blocks.

``tests/test_docs_prose.py`` holds the rules (paragraph length, a heading every so many words, a
command page opening with a runnable example); this module only splits a page into blocks, so a
rule reads what a reader sees: prose, not code, tables, comments or the reference the build
generates. Run it on one page to see its outline with word counts::

    python -m tests.docs_prose docs/commands/recover.md
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(\s*)(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LIST_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")
ADMONITION = re.compile(r"^(\s*)(?:!!!|\?\?\?\+?)\s*(\w+)")
LINK_TARGET = re.compile(r"\]\([^)]*\)|\]\[[^\]]*\]")
HTML_LINE = re.compile(r"^\s*</?[a-zA-Z][^>]*>\s*$")


@dataclass
class Block:
    """One thing on a page: ``kind`` is heading, prose, item, code, table, admonition or comment."""

    kind: str
    text: str
    line: int           # 1-based line of its first line in the page
    level: int = 0      # a heading's level
    info: str = ""      # a code block's info string, an admonition's type, the comment before a code block

    @property
    def words(self) -> int:
        return count_words(self.text) if self.kind in ("prose", "item") else 0


def count_words(text: str) -> int:
    """The words a reader reads: link targets and Markdown markup are not words, inline code is."""
    text = LINK_TARGET.sub("]", text)
    text = re.sub(r"\{[#.][^}]*\}", " ", text)   # attr_list
    return len([word for word in re.split(r"\s+", text) if re.search(r"\w", word)])


def blocks(markdown: str) -> list[Block]:
    """The page's blocks in order (prose paragraphs and list items are one block each)."""
    lines = markdown.split("\n")
    found: list[Block] = []
    current: Block | None = None
    comment = ""
    i = 0

    def close():
        nonlocal current
        if current is not None:
            found.append(current)
        current = None

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        fence = FENCE.match(line)
        if fence:
            close()
            marker, start = fence.group(2), i
            info = line.strip()[3:].strip()
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                i += 1
            found.append(Block("code", "\n".join(lines[start + 1:i]), start + 1, info=info + ("|" + comment if comment else "")))
            comment = ""
            i += 1
            continue
        if stripped.startswith("<!--"):
            close()
            start = i
            while "-->" not in lines[i]:
                i += 1
            comment = " ".join(lines[start:i + 1]).strip()
            found.append(Block("comment", comment, start + 1))
            i += 1
            continue
        if not stripped:
            close()
            i += 1
            continue
        comment = ""
        heading = HEADING.match(line)
        if heading and not line.startswith(" "):
            close()
            found.append(Block("heading", heading.group(2), i + 1, level=len(heading.group(1))))
        elif stripped.startswith("|"):
            if current is None or current.kind != "table":
                close()
                current = Block("table", "", i + 1)
            current.text += line + "\n"
        elif ADMONITION.match(line):
            close()
            found.append(Block("admonition", stripped, i + 1, info=ADMONITION.match(line).group(2)))
        elif LIST_ITEM.match(line):
            close()
            current = Block("item", LIST_ITEM.sub("", line), i + 1)
        elif HTML_LINE.match(line):
            close()
        elif current is not None and current.kind in ("prose", "item"):
            current.text += " " + stripped
        else:
            close()
            current = Block("prose", stripped, i + 1)
        i += 1
    close()
    return found


def sections(page_blocks: list[Block]) -> list[tuple[Block | None, list[Block]]]:
    """The blocks between one heading and the next: (heading or None for the top, blocks)."""
    result: list[tuple[Block | None, list[Block]]] = [(None, [])]
    for block in page_blocks:
        if block.kind == "heading":
            result.append((block, []))
        else:
            result[-1][1].append(block)
    return result


def outline(path: Path) -> str:
    lines = []
    for heading, content in sections(blocks(path.read_text())):
        words = sum(block.words for block in content)
        longest = max((block.words for block in content), default=0)
        title = f"{'#' * heading.level} {heading.text}" if heading else "(top)"
        lines.append(f"{title}: {words} words of prose, longest paragraph {longest}")
    return "\n".join(lines)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}\n{outline(Path(name))}\n")
