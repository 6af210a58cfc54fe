"""The docs pages are shaped for a reader who scans: checked here like code.

- No paragraph or list item of prose longer than ``MAX_PARAGRAPH`` words.
- A heading at least every ``MAX_SECTION`` words of prose, so the table of contents (the right-hand
  navigation, built from the headings) is the page's outline.
- A paragraph that names more than ``MAX_CODE_SPANS`` code spans is an enumeration: a list or a
  table reads better (the JSON plan's fields, the files a command writes).
- Every command page opens with when to use the command and one runnable example with its output,
  before its first section; it has sections of its own besides the generated reference.

A page is read as the site shows it: its placeholders expanded by docs/hooks.py (the runbooks page
is examples/runbooks/README.md), all but the generated reference of a command's options, a list
to look an option up in rather than read. Code blocks, tables and comments are not prose (``tests/docs_prose.py``
splits a page; ``python -m tests.docs_prose PAGE`` prints a page's outline with its word counts).
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from tests.docs_prose import Block, blocks, sections
from tests.test_docs_site import hooks

DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
COMMAND_PAGES = sorted((DOCS / "commands").glob("*.md"))
MAX_PARAGRAPH = 120
MAX_SECTION = 400
MAX_CODE_SPANS = 8
WHEN_TO_USE = 80          # the opening paragraph(s) before a command page's example
MIN_SECTIONS = 3          # a command page's own ## sections, the reference not counted
CODE_SPAN = re.compile(r"`[^`\n]+`")


def page_id(page):
    return str(page.relative_to(DOCS))


def page_blocks(page) -> list[Block]:
    """The page's blocks as the site shows them (placeholders but the reference expanded)."""
    def expand(match):
        kind, argument = match.group(1), match.group(2)
        return match.group(0) if kind == "reference" else hooks.expand_placeholder(kind, argument)

    return blocks(hooks.PLACEHOLDER.sub(expand, page.read_text()))


def long_paragraphs(page_blocks: list[Block], limit: int = MAX_PARAGRAPH) -> list[str]:
    return [f"line {block.line}: {block.words} words: {block.text[:70]}..."
            for block in page_blocks if block.words > limit]


def long_sections(page_blocks: list[Block], limit: int = MAX_SECTION) -> list[str]:
    found = []
    for heading, content in sections(page_blocks):
        words = sum(block.words for block in content)
        if words > limit:
            where = f"line {heading.line} '{heading.text}'" if heading else "the page's top"
            found.append(f"{where}: {words} words of prose before the next heading")
    return found


def enumerations(page_blocks: list[Block], limit: int = MAX_CODE_SPANS) -> list[str]:
    found = []
    for block in page_blocks:
        if block.kind == "prose":
            spans = CODE_SPAN.findall(block.text)
            if len(spans) > limit:
                found.append(f"line {block.line}: {len(spans)} code spans in one paragraph "
                             f"({', '.join(spans[:4])}, ...): a list or a table")
    return found


def opening_problems(page_blocks: list[Block]) -> list[str]:
    """What is wrong with a command page's opening: H1, when to use, one runnable example with output."""
    content = [block for block in page_blocks if block.kind != "comment" or "not run" in block.text]
    if not content or content[0].kind != "heading" or content[0].level != 1:
        return ["the page does not start with its # title"]
    problems = []
    before_section = []
    for block in content[1:]:
        if block.kind == "heading" and block.level <= 2:
            break
        before_section.append(block)
    if not before_section or before_section[0].kind != "prose":
        problems.append("no paragraph saying when to use the command right under the title")
    codes = [block for block in before_section if block.kind == "code"]
    if not codes:
        return problems + ["no example before the first section"]
    prose_before = sum(block.words for block in before_section[:before_section.index(codes[0])])
    if prose_before > WHEN_TO_USE:
        problems.append(f"{prose_before} words before the example (at most {WHEN_TO_USE}: when to use, then the example)")
    example = codes[0]
    if not example.info.startswith("console"):
        problems.append(f"the first example is a ```{example.info} block, not a ```console block the suite runs")
    elif "not run" in example.info:
        problems.append("the first example is marked 'not run': the opening example must run on the bundled example")
    lines = example.text.split("\n")
    if not any(line.startswith("$ ") for line in lines):
        problems.append("the first example has no command")
    elif not any(line and not line.startswith("$ ") and not line.startswith(">") for line in lines):
        problems.append("the first example shows no output")
    return problems


def own_sections(page_blocks: list[Block]) -> list[str]:
    return [block.text for block in page_blocks if block.kind == "heading" and block.level == 2
            and block.text.lower() != "reference"]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_paragraph_is_a_wall(page):
    assert long_paragraphs(page_blocks(page)) == []


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_a_heading_at_least_every_400_words(page):
    assert long_sections(page_blocks(page)) == []


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_enumerations_are_lists_or_tables(page):
    assert enumerations(page_blocks(page)) == []


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=page_id)
def test_a_command_page_opens_with_when_and_an_example(page):
    assert opening_problems(page_blocks(page)) == []


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=page_id)
def test_a_command_page_has_an_outline(page):
    headings = own_sections(page_blocks(page))
    assert len(headings) >= MIN_SECTIONS, f"## sections besides the reference: {headings}"


def test_the_rules_catch_what_they_name():
    wall = " ".join(["word"] * (MAX_PARAGRAPH + 1))
    assert long_paragraphs(blocks(f"# T\n\n{wall}\n")) and not long_paragraphs(blocks(f"# T\n\n```\n{wall}\n```\n"))
    assert long_paragraphs(blocks(f"# T\n\n- {wall}\n")), "a list item is a paragraph too"
    assert not long_paragraphs(blocks(f"# T\n\n| {wall} |\n|---|\n"))
    paragraph = " ".join(["word"] * 100)
    five = "\n\n".join([paragraph] * 5)
    assert long_sections(blocks(f"# T\n\n{five}\n")) and not long_sections(blocks(f"# T\n\n{paragraph}\n\n## S\n\n{paragraph}\n"))
    spans = " ".join(f"`f{i}`" for i in range(MAX_CODE_SPANS + 1))
    assert enumerations(blocks(f"# T\n\n{spans}\n")) and not enumerations(blocks(f"# T\n\n- {spans}\n"))
    good = "# `seglog x`\n\nUse it when.\n\n```console\n$ seglog x\nout\n```\n\n## A\n"
    assert opening_problems(blocks(good)) == []
    assert opening_problems(blocks("# `seglog x`\n\nUse it when.\n\n## A\n\n```console\n$ seglog x\nout\n```\n"))
    assert opening_problems(blocks("# `seglog x`\n\nUse it.\n\n<!-- not run: no -->\n```console\n$ seglog x\nout\n```\n"))
    assert opening_problems(blocks("# `seglog x`\n\nUse it when.\n\n```console\n$ seglog x\n```\n"))
    assert opening_problems(blocks("# `seglog x`\n\n```console\n$ seglog x\nout\n```\n"))
