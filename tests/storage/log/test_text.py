"""``java_utf8`` is ``new String(bytes, StandardCharsets.UTF_8)``.

The table was produced by OpenJDK 17 and is checked again against the local JVM when one is on
PATH: a small Java program of our own decodes 20 000 random byte strings and strings assembled
from the table's fragments, and every result must equal ``java_utf8``'s.
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess

import pytest

from seglog_cli.storage.log.text import java_utf8

R = "\ufffd"

# hex input -> Java's String (OpenJDK 17.0.15)
JAVA_VECTORS = [
    ("", ""),
    ("6b61666b61", "kafka"),
    # UTF-8-encoded surrogates (CESU-8 style): Java replaces the whole sequence, or its 2-byte
    # prefix, with ONE U+FFFD; Python's errors="replace" gives one per byte.
    ("eda080", R),
    ("edbfbf", R),
    ("edb080", R),
    ("eda080edb080", R * 2),  # a CESU-8 surrogate pair: two replacements, not a code point
    ("eda0", R),  # truncated surrogate
    ("61eda062", "a" + R + "b"),
    ("eda0eda0", R * 2),
    ("edbfbfed", R * 2),
    ("ed", R),
    ("ed9fbf", "\ud7ff"),  # the last code point before the surrogates is fine
    # overlong encodings: every byte is replaced
    ("c080", R * 2),
    ("c1bf", R * 2),
    ("e08080", R * 3),
    ("e080", R * 2),
    ("f08f8080", R * 4),
    # above U+10FFFF and invalid lead bytes
    ("f4908080", R * 4),
    ("f5808080", R * 4),
    ("f8888080", R * 4),
    ("fc84808080", R * 5),
    ("fe", R),
    ("ff", R),
    # lone continuation bytes
    ("80", R),
    ("bf", R),
    # truncated multi-byte sequences: one replacement for the maximal valid prefix
    ("c2", R),
    ("c361", R + "a"),
    ("e0", R),
    ("e0a0", R),
    ("e28c", R),
    ("e28c61", R + "a"),
    ("f0", R),
    ("f090", R),
    ("f09080", R),
    ("f09f98", R),
    ("f09f986161", R + "aa"),
    ("f48f", R),
    # valid sequences, 2 to 4 bytes, up to U+10FFFF
    ("c3a9", "\u00e9"),
    ("e0a080", "\u0800"),
    ("e28ca8", "\u2328"),
    ("f0908080", "\U00010000"),
    ("f09f9880", "\U0001f600"),
    ("f48fbfbf", "\U0010ffff"),
    ("6869f09f988020c3a9", "hi\U0001f600 \u00e9"),
]


@pytest.mark.parametrize("hex_input,expected", JAVA_VECTORS, ids=[v[0] or "empty" for v in JAVA_VECTORS])
def test_java_vectors(hex_input, expected):
    assert java_utf8(bytes.fromhex(hex_input)) == expected


def test_surrogate_encodings_differ_from_python_replace():
    """The point of the custom error handler: Python alone would not match Java here."""
    data = bytes.fromhex("eda080")
    assert data.decode("utf-8", "replace") == R * 3
    assert java_utf8(data) == R


def test_valid_utf8_is_decoded_unchanged():
    text = "Kafka \u00e9t\u00e9 \u2328 \U0001f600 \U0010ffff \x00"
    assert java_utf8(text.encode("utf-8")) == text


# -- against a real JVM -------------------------------------------------------------------------

JAVA_PROGRAM = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;

/** Reads int32 count, then (int32 length, bytes) items; writes int32 count, then for each item
 *  int32 UTF-16 length and the UTF-16BE chars of new String(bytes, UTF_8). */
public class JavaUtf8 {
    public static void main(String[] args) throws IOException {
        try (DataInputStream in = new DataInputStream(
                 new BufferedInputStream(new FileInputStream(args[0])));
             DataOutputStream out = new DataOutputStream(
                 new BufferedOutputStream(new FileOutputStream(args[1])))) {
            int count = in.readInt();
            out.writeInt(count);
            for (int i = 0; i < count; i++) {
                byte[] data = new byte[in.readInt()];
                in.readFully(data);
                String text = new String(data, StandardCharsets.UTF_8);
                out.writeInt(text.length());
                out.writeChars(text);
            }
        }
    }
}
"""

# bytes where UTF-8 decoders disagree: ASCII, continuation ranges, lead bytes of every kind
INTERESTING = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
               0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFB, 0xFC,
               0xFE, 0xFF]


def _random_inputs(count: int, seed: int = 20260820) -> list[bytes]:
    rng = random.Random(seed)
    fragments = [bytes.fromhex(h) for h, _ in JAVA_VECTORS if h]
    out = []
    for i in range(count):
        size = rng.randint(0, 16)
        if i % 3 == 0:
            out.append(rng.randbytes(size))
        elif i % 3 == 1:
            out.append(bytes(rng.choice(INTERESTING) for _ in range(size)))
        else:  # structured: fragments of the table, glued and sometimes cut
            joined = b"".join(rng.choice(fragments) for _ in range(rng.randint(1, 5)))
            out.append(joined[:rng.randint(0, len(joined))] if rng.random() < 0.3 else joined)
    return out


@pytest.fixture(scope="module")
def java_decode(tmp_path_factory):
    if not (shutil.which("java") and shutil.which("javac")):
        pytest.skip("no JDK (java and javac) on PATH: cannot compare with new String(bytes, UTF_8)")
    work = tmp_path_factory.mktemp("java-utf8")
    (work / "JavaUtf8.java").write_text(JAVA_PROGRAM)
    subprocess.run(["javac", "-d", str(work), str(work / "JavaUtf8.java")], check=True, capture_output=True)

    def decode(items: list[bytes]) -> list[str]:
        source, target = work / "in.bin", work / "out.bin"
        source.write_bytes(struct.pack(">i", len(items))
                           + b"".join(struct.pack(">i", len(item)) + item for item in items))
        subprocess.run(["java", "-cp", str(work), "JavaUtf8", str(source), str(target)],
                       check=True, capture_output=True, timeout=120)
        raw = target.read_bytes()
        (count,) = struct.unpack_from(">i", raw, 0)
        assert count == len(items)
        pos, texts = 4, []
        for _ in range(count):
            (length,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            texts.append(raw[pos:pos + 2 * length].decode("utf-16-be", "surrogatepass"))
            pos += 2 * length
        assert pos == len(raw)
        return texts

    return decode


def test_table_matches_the_local_jvm(java_decode):
    inputs = [bytes.fromhex(h) for h, _ in JAVA_VECTORS]
    assert java_decode(inputs) == [expected for _, expected in JAVA_VECTORS]


def test_random_and_structured_bytes_match_the_local_jvm(java_decode):
    inputs = _random_inputs(20_000)
    assert sum(1 for item in inputs if java_utf8(item) != item.decode("utf-8", "replace")) > 100
    java = java_decode(inputs)
    mismatches = [(item.hex(), expected, java_utf8(item)) for item, expected in zip(inputs, java)
                  if java_utf8(item) != expected]
    assert mismatches == []
