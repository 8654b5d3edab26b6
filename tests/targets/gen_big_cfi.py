#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""An ELF file whose unwind table has more rows than a big library's: a stand-in for the
450 MB libraries (libtorch_cuda.so) this machine does not have (issue 28).

Usage: gen_big_cfi.py OUT [FDES]

OUT is an x86-64 ELF (ET_DYN, no section headers, one R+X PT_LOAD at offset 0 and a
PT_GNU_EH_FRAME) found as a loader finds it: .eh_frame_hdr, then .eh_frame.  It holds FDES
(default 560,000) filler functions of 16 bytes of int3, each FDE with 9 rows (CFA rsp+8, then
+16 ... +72 a byte apart), so about 9 x FDES rows once merged, and last of all one real
function at e_entry, big_call(fn): sub $24,%rsp; call *%rdi; add $24,%rsp; ret — whose caller
is found only through its own FDE (CFA rsp+32 inside it; no frame pointer).  A program maps the
file (tests/targets/big_cfi_call.c) and calls big_call through it.  Written directly, not by the
assembler: gas takes two minutes over a million .cfi_startproc.
"""
import struct
import sys

FILLER = 16
BIG_CALL = bytes.fromhex("4883ec18" "ffd7" "4883c418" "c3")  # sub, call *%rdi, add, ret


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def entry(body, align=8):
    """A CIE/FDE: its length word, then body padded with DW_CFA_nop to a multiple of align."""
    pad = -(4 + len(body)) % align
    body += b"\0" * pad
    return struct.pack("<I", len(body)) + body


def main():
    out = sys.argv[1]
    nfde = int(sys.argv[2]) if len(sys.argv) > 2 else 560000
    text_off = 0x1000
    big_call = text_off + nfde * FILLER
    text_end = big_call + len(BIG_CALL)
    hdr_off = (text_end + 3) & ~3
    hdr_len = 12 + 8 * (nfde + 1)
    eh_off = (hdr_off + hdr_len + 7) & ~7

    # CIE: version 1, "zR", code 1, data -8, RA r16, FDE pointers pcrel|sdata4;
    # CFA = rsp + 8, RA at CFA - 8.
    cie = entry(b"\0\0\0\0" + b"\x01zR\0" + b"\x01\x78\x10" + b"\x01\x1b" + b"\x0c\x07\x08\x90\x01")
    filler_ops = b"".join(b"\x41\x0e" + uleb(8 + 8 * k) for k in range(1, 9))
    big_ops = b"\x44\x0e\x20" + b"\x46\x0e\x08"  # +4: CFA rsp+32; +10: rsp+8
    eh = bytearray(cie)
    table = []
    for i in range(nfde + 1):
        pc, size, ops = (
            (text_off + i * FILLER, FILLER, filler_ops)
            if i < nfde
            else (big_call, len(BIG_CALL), big_ops)
        )
        at = eh_off + len(eh)
        # CIE pointer: from this field (at + 4) back to the CIE; pc_begin: pc-relative.
        eh += entry(struct.pack("<Iii", at + 4 - eh_off, pc - (at + 8), size) + b"\0" + ops)
        table.append((pc - hdr_off, at - hdr_off))
    eh += b"\0\0\0\0"  # terminator

    hdr = bytearray(b"\x01\x1b\x03\x3b")
    hdr += struct.pack("<iI", eh_off - (hdr_off + 4), len(table))
    for loc, fde in table:
        hdr += struct.pack("<ii", loc, fde)
    assert len(hdr) == hdr_len

    size = eh_off + len(eh)
    ehdr = struct.pack(
        "<16sHHIQQQIHHHHHH",
        b"\x7fELF\x02\x01\x01" + b"\0" * 9,
        3,  # ET_DYN
        62,  # EM_X86_64
        1,
        big_call,  # e_entry: big_call
        64,  # e_phoff
        0,  # e_shoff: none
        0,
        64,
        56,
        2,  # PT_LOAD, PT_GNU_EH_FRAME
        64,
        0,
        0,
    )
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)  # R+X
    ehf = struct.pack("<IIQQQQQQ", 0x6474E550, 4, hdr_off, hdr_off, hdr_off, hdr_len, hdr_len, 4)
    img = bytearray(size)
    img[0 : 64 + 112] = ehdr + load + ehf
    img[text_off:big_call] = b"\xcc" * (nfde * FILLER)
    img[big_call:text_end] = BIG_CALL
    img[hdr_off : hdr_off + hdr_len] = hdr
    img[eh_off:size] = eh
    with open(out, "wb") as f:
        f.write(img)


if __name__ == "__main__":
    main()
