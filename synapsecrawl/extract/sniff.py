"""Whether a body meant as text is text: binary bytes (an image, an archive, compressed data) are not.

Two looks, cheapest first. The first bytes: the signatures of the formats a server sends by
mistake under a text type (WHATWG MIME Sniffing §6, plus archives and compressed streams: a body
compressed twice under one ``Content-Encoding`` is still compressed after one inflation). Then the
decoded text: text has no control characters and few replacement characters, binary data read
as text is full of both (``unreadable_share``).

PDF is named here only to say what the bytes are: a body sent untyped or as ``application/pdf``
is read as a PDF (``read.media_type``); sent as HTML or plain text, it is refused like any other
binary body rather than read as markup (the reading that asks less of a page that says one thing
and is another).
"""

from __future__ import annotations

import re

__all__ = ["MAX_CONTROL_SHARE", "MAX_REPLACED_SHARE", "binary_signature", "unreadable_share"]

MAX_CONTROL_SHARE = 0.05
MAX_REPLACED_SHARE = 0.5
_SAMPLE_CHARS = 65_536
_MIN_UNREADABLE = 8  # a short page with a stray control character is still text

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x00\x00\x01\x00", "an icon"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x00\x00\x00\x0cjP  ", "a JPEG 2000 image"),
    (b"wOFF", "a font"),
    (b"wOF2", "a font"),
    (b"\x00\x01\x00\x00\x00", "a font"),
    (b"OTTO\x00", "a font"),
    (b"\x1f\x8b", "gzip data"),
    (b"PK\x03\x04", "a zip archive"),
    (b"PK\x05\x06", "a zip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"\x28\xb5\x2f\xfd", "zstd data"),
    (b"\x04\x22\x4d\x18", "lz4 data"),
    (b"%PDF-", "a PDF document"),
    (b"\x7fELF", "a program"),
    (b"\x00asm", "a WebAssembly module"),
    (b"\xca\xfe\xba\xbe", "a program"),
    (b"OggS\x00", "an Ogg stream"),
    (b"fLaC", "a FLAC sound"),
    (b"\x1aE\xdf\xa3", "a video"),
    (b"SQLite format 3\x00", "an SQLite database"),
)
# signatures a text could begin with, told apart by more of their header
_PATTERNS: tuple[tuple[re.Pattern[bytes], str], ...] = (
    (re.compile(rb"RIFF....WEBP", re.DOTALL), "a WebP image"),
    (re.compile(rb"RIFF....WAVE", re.DOTALL), "a WAV sound"),
    (re.compile(rb"RIFF....AVI ", re.DOTALL), "a video"),
    (re.compile(rb"BM....\x00\x00\x00\x00", re.DOTALL), "a BMP image"),
    (re.compile(rb"ID3[\x02-\x04]\x00"), "an MP3 sound"),
    (re.compile(rb"BZh[1-9]1AY&SY"), "bzip2 data"),
    (re.compile(rb"....ftyp(?:isom|iso2|mp4|avc1|M4V|M4A|qt  |heic|avif|3gp)", re.DOTALL), "a video or image"),
)
_ZLIB = re.compile(rb"\x78[\x01\x5e\x9c\xda]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
# The same characters counted in the text's UTF-8 bytes: bytes.translate and a search led by one literal byte
# count them faster than the character class does.
# Exact, as in UTF-8 a byte under 0x80 is only ever that ASCII character, and U+0080-U+009F are 0xC2 0x80-0x9F.
_ASCII_CONTROLS = bytes(sorted({*range(0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20), 0x7F}))
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")


def binary_signature(body: bytes) -> str:
    """What the first bytes of ``body`` say it is (e.g. "a PNG image"); "" when they say nothing."""
    head = body[:32]
    found = next((name for magic, name in _SIGNATURES if head.startswith(magic)), "")
    found = found or next((name for pattern, name in _PATTERNS if pattern.match(head)), "")
    if not found and _ZLIB.match(head) and int.from_bytes(head[:2], "big") % 31 == 0:
        found = "zlib data"  # RFC 1950 §2.2: the header's check bits make it a multiple of 31
    return found


def _controls(text: str) -> int:
    """How many of ``_CONTROL``'s characters ``text`` holds."""
    encoded = text.encode("utf-8", "surrogatepass")
    return len(encoded) - len(encoded.translate(None, _ASCII_CONTROLS)) + len(_C1_UTF8.findall(encoded))


def unreadable_share(text: str) -> str:
    """Why the start of decoded ``text`` is no text ("" when it reads as text).

    Control characters (C0 but tab, line and form feed, carriage return and the escape of terminal
    colours; DEL; C1): text has none,
    binary bytes read in any one-byte charset are one in nine. Replacement characters: a few are a
    page declared in the wrong charset (kept, as browsers show it), one in two is no text at all.
    """
    sample = text[:_SAMPLE_CHARS]
    if not sample:
        return ""
    controls = _controls(sample)
    if controls >= _MIN_UNREADABLE and controls / len(sample) >= MAX_CONTROL_SHARE:
        return f"{controls / len(sample):.0%} of its characters are control characters"
    replaced = sample.count("\ufffd")
    if replaced >= _MIN_UNREADABLE and replaced / len(sample) >= MAX_REPLACED_SHARE:
        return f"{replaced / len(sample):.0%} of its bytes are no character of its charset"
    return ""
