"""Tables that fit a width without breaking a token (seglog_cli.render.fit)."""

from __future__ import annotations

import random
import re

import pytest

from seglog_cli.render import fit

FINDING_COLUMNS = [fit.Column("severity"), fit.Column("code"),
                   fit.Column("file", drop=1, short=fit.short_path, label="file"),
                   fit.Column("position", right=True, drop=3, label="position"),
                   fit.Column("offset", right=True, drop=2, label="offset"), fit.Column("message", wrap=True)]
ROW = ["error", "BATCH_CRC_MISMATCH", "/var/lib/kafka/data/orders-0/00000000000000008203.log", "122737", "6461",
       "stored CRC 2142666254 does not match the CRC-32C 3735928559 computed over the batch"]


def words(lines):
    return [word for line in lines for word in line.split()]


@pytest.mark.parametrize("width", [200, 120, 100, 80, 60, 40])
def test_every_token_stays_whole_and_lines_fit(width):
    lines = fit.render(FINDING_COLUMNS, [ROW], width)
    for line in lines:
        assert len(line) <= width or len(line.split()) == 1 or width < 60, (width, line)
    shown = words(lines)
    for token in ROW[:2] + ROW[3:5] + ROW[5].split():
        assert token in shown, (width, token, lines)
    path = ROW[2]
    assert path in shown or fit.short_path(path) in shown


def test_wide_keeps_every_column_on_the_row():
    lines = fit.render(FINDING_COLUMNS, [ROW], 250)
    assert len(lines) == 2
    assert lines[0].split() == ["severity", "code", "file", "position", "offset", "message"]
    assert lines[1].split()[:5] == ["error", "BATCH_CRC_MISMATCH", ROW[2], "122737", "6461"]


def test_narrow_shortens_then_moves_labelled_columns_under_the_row():
    lines = fit.render(FINDING_COLUMNS, [ROW], 80)
    # the path is shortened first, then position (dropped first) and the message go under the row
    assert lines[0].split() == ["severity", "code", "file", "offset"]
    assert lines[1].split() == ["error", "BATCH_CRC_MISMATCH", "orders-0/00000000000000008203.log", "6461"]
    under = " ".join(line.strip() for line in lines[2:])
    assert re.match(r"position 122737\s+stored CRC 2142666254 does not match", under), under
    assert all(line.startswith(fit.DETAIL_INDENT) for line in lines[2:])
    assert max(len(line) for line in lines) <= 80
    narrower = fit.render(FINDING_COLUMNS, [ROW], 64)
    assert narrower[0].split() == ["severity", "code", "file"]
    assert re.match(r"position 122737\s+offset 6461\s+stored", narrower[2].strip()), narrower


def test_a_label_never_ends_a_line_without_its_value():
    """Unless label and value together are wider than the room under the row (then the value,
    whole, takes a line of its own)."""
    for width in range(30, 90):
        lines = fit.render(FINDING_COLUMNS, [ROW], width)
        under = lines[2:]
        for n, line in enumerate(under):
            if re.search(r"\b(position|offset|file)$", line.strip()):
                value = under[n + 1].split()
                assert len(value) == 1 and len(line.split()[-1]) + 1 + len(value[0]) > width - 4, (width, lines)


def test_right_aligned_numbers_and_no_trailing_spaces():
    columns = [fit.Column("name"), fit.Column("count", right=True)]
    lines = fit.render(columns, [["a", 5], ["bbbb", 12345]], 80)
    assert lines == ["name  count", "a         5", "bbbb  12345"]


def test_colour_only_when_asked():
    columns = [fit.Column("severity"), fit.Column("n", right=True)]
    plain = fit.render(columns, [[fit.Cell("error", "bold red"), 1]], 80, color=False)
    painted = fit.render(columns, [[fit.Cell("error", "bold red"), 1]], 80, color=True)
    assert "\x1b[" not in "".join(plain)
    assert "\x1b[1;31merror\x1b[0m" in painted[1]
    # the colour codes take no room: the columns line up as in the plain table
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted[1]) == plain[1]


def test_random_tables_never_break_a_token():
    rng = random.Random(2026)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_./"
    for _ in range(300):
        ncols = rng.randint(2, 7)
        columns = []
        for n in range(ncols):
            wrap = n == ncols - 1 and rng.random() < 0.5
            columns.append(fit.Column(f"h{n}", right=rng.random() < 0.3, drop=0 if n == 0 else rng.randint(0, 5),
                                      wrap=wrap, label=None if wrap or rng.random() < 0.3 else f"h{n}"))
        rows = []
        for _ in range(rng.randint(1, 5)):
            row = []
            for column in columns:
                count = rng.randint(1, 12) if column.wrap else 1
                row.append(" ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
                                    for _ in range(count)))
            rows.append(row)
        width = rng.randint(30, 160)
        lines = fit.render(columns, rows, width)
        shown = set(words(lines))
        dropped = {n for n, c in enumerate(columns) if c.label is None and not c.wrap and c.drop}
        for row in rows:
            for n, value in enumerate(row):
                if n in dropped and not any(value == w for w in shown):
                    continue  # an unlabelled column may be dropped whole
                for token in value.split():
                    assert token in shown, (width, token, lines)


def test_counted_plurals():
    assert fit.counted(1, "partition") == "1 partition"
    assert fit.counted(2, "partition") == "2 partitions"
    assert fit.counted(1, "batch", "batches") == "1 batch"
    assert fit.counted(0, "batch", "batches") == "0 batches"


def test_paragraph_wraps_between_words_and_keeps_long_words_whole():
    long_word = "/x" * 50
    lines = fit.paragraph(f"  see {long_word} for the rest of the text", 40)
    assert long_word in [w for line in lines for w in line.split()]
    assert all(line.startswith("  ") for line in lines)
