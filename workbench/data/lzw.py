"""Unix ``compress`` (``.Z``) files: LZW with 9…`maxbits`-bit codes, written least
significant bit first, in groups of eight codes — when the code width changes (or the
table is cleared, code 256 in block mode) the rest of the current group is padding. The UCI
archive serves a few files only this way (musk's clean1.data.Z, shuttle.trn.Z); Python's
standard library has no reader for them.

`decompress` follows that format; `compress` writes it (no clear codes), for the tests'
fixtures and mirrors.
"""

from __future__ import annotations

from workbench.errors import WorkbenchError

__all__ = ["compress", "decompress"]

MAGIC = b"\x1f\x9d"
CLEAR = 256


def decompress(data: bytes, where: str = "") -> bytes:
    """The content of a ``.Z`` file; a damaged stream is one line naming `where`."""
    if len(data) < 3 or data[:2] != MAGIC:
        raise WorkbenchError(f"{where}: not a compress (.Z) file")
    maxbits, block = data[2] & 0x1F, bool(data[2] & 0x80)
    if not 9 <= maxbits <= 16:
        raise WorkbenchError(f"{where}: a .Z file with {maxbits}-bit codes")
    buf = bytes(data[3:]) + b"\0\0\0"
    total = (len(data) - 3) * 8
    table: list[bytes] = [bytes([i]) for i in range(256)] + [b""]
    top = 1 << maxbits
    width, limit = 9, _limit(9, maxbits)
    free = 257 if block else 256
    pos = start = 0  # bit positions: the next code, where this code width began
    out = bytearray()
    prev: bytes | None = None
    while True:
        if free > limit:  # (never at maxbits: the limit is then the table's size)
            pos = start = _aligned(pos, start, width)
            width += 1
            limit = _limit(width, maxbits)
        if pos + width > total:
            break
        code = (int.from_bytes(buf[pos >> 3:(pos >> 3) + 3], "little") >> (pos & 7)) \
            & ((1 << width) - 1)
        pos += width
        if code == CLEAR and block:
            table = table[:257]
            free = 256
            pos = start = _aligned(pos, start, width)
            width, limit = 9, _limit(9, maxbits)
            continue
        if code < len(table):
            entry = table[code]
        elif code == free and prev is not None:  # the KwKwK case
            entry = prev + prev[:1]
        else:
            raise WorkbenchError(f"{where}: the .Z stream is damaged (code {code} at bit "
                                 f"{pos - width}); the download was altered: fetch again")
        out += entry
        if prev is not None and free < top:
            if free < len(table):
                table[free] = prev + entry[:1]
            else:
                table.append(prev + entry[:1])
            free += 1
        prev = entry
    return bytes(out)


def _limit(width: int, maxbits: int) -> int:
    """The last code a table may reach before the width grows (at `maxbits` it never
    grows: the table's size)."""
    return 1 << maxbits if width == maxbits else (1 << width) - 1


def _aligned(pos: int, start: int, width: int) -> int:
    """`pos` moved to the end of its group of eight `width`-bit codes counted from
    `start`."""
    group = width * 8
    return start + -(-(pos - start) // group) * group


def compress(data: bytes, maxbits: int = 16) -> bytes:
    """`data` as a block-mode ``.Z`` file (no clear codes)."""
    table = {bytes([i]): i for i in range(256)}
    codes: list[int] = []
    word = b""
    for b in data:
        grown = word + bytes([b])
        if grown in table:
            word = grown
            continue
        codes.append(table[word])
        if len(table) + 1 < (1 << maxbits):  # (code 256 is the clear code)
            table[grown] = len(table) + 1
        word = bytes([b])
    if word:
        codes.append(table[word])
    out = bytearray()
    acc = nacc = pos = start = 0

    def put(value: int, nbits: int) -> None:
        nonlocal acc, nacc
        acc |= value << nacc
        nacc += nbits
        while nacc >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nacc -= 8

    width, limit, free, top = 9, _limit(9, maxbits), 257, 1 << maxbits
    for k, code in enumerate(codes):
        if free > limit:
            aligned = _aligned(pos, start, width)
            put(0, aligned - pos)
            pos = start = aligned
            width += 1
            limit = _limit(width, maxbits)
        put(code, width)
        pos += width
        if k >= 1 and free < top:  # the entry the reader adds after this code
            free += 1
    if nacc:
        out.append(acc & 0xFF)
    return MAGIC + bytes([0x80 | maxbits]) + bytes(out)
