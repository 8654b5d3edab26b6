#!/usr/bin/python3
"""Regenerate the hand-made and copied seeds of tests/fuzz/corpus/ (reproducers of fixed bugs
are committed as they were found and not touched here).  Run from the top of the tree after
`make build/fixtures/symfix-pie` (the fixtures are the small ELF files with every section kind
we read); real Debian files are copied from the system when present."""
import lzma
import os
import shutil
import struct
import subprocess
import sys

C = "tests/fuzz/corpus"


def put(parser, name, data):
    os.makedirs(f"{C}/{parser}", exist_ok=True)
    with open(f"{C}/{parser}/{name}", "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- ELF -----------------------------------------------------------------------------
def ehdr(b):
    """(e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx) of ELF64."""
    phoff, shoff = struct.unpack_from("<QQ", b, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", b, 54)
    return phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx


def sections(b):
    _, shoff, _, _, shentsize, shnum, shstrndx = ehdr(b)
    out = []
    for i in range(shnum):
        o = shoff + i * shentsize
        name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", b, o)
        out.append(dict(i=i, hdr=o, name=name, type=typ, off=off, size=size, link=link,
                        entsize=entsize))
    stro = out[shstrndx]["off"]
    for s in out:
        end = b.index(b"\0", stro + s["name"])
        s["sname"] = b[stro + s["name"]:end].decode()
    return out


def sec(b, name):
    return next(s for s in sections(b) if s["sname"] == name)


def patch(b, off, fmt, *vals):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, *vals)
    return bytes(b)


def elf_seeds():
    fx = "build/fixtures"
    for f in ["symfix-pie", "symfix-debuglink", "symfix-pie.debug", "libsymfix-stripped.so"]:
        put("elf", f, read(f"{fx}/{f}"))
    for f in ["/usr/lib/x86_64-linux-gnu/libdl.so.2"]:
        if os.path.exists(f):
            put("elf", "debian-" + os.path.basename(f), read(f))
    # The vDSO, as the symbolizer reads it from a process's memory.
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[vdso]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            with open("/proc/self/mem", "rb") as mem:
                mem.seek(lo)
                put("elf", "vdso", mem.read(hi - lo))
    pie = read(f"{fx}/symfix-pie")
    link = read(f"{fx}/symfix-debuglink")
    phoff, shoff, phentsize, phnum, shentsize, shnum, shstrndx = ehdr(pie)
    # Truncated: inside the identification, inside the header, right after it.
    for n in (4, 16, 52, 63, 64, 200):
        put("elf", f"truncated-{n}", pie[:n])
    # Section header table cut off; program headers cut off.
    put("elf", "truncated-shdrs", pie[:shoff + shentsize * 3])
    # Huge counts pointing past the end.
    put("elf", "huge-phnum", patch(pie, 56, "<H", 0xffff))
    put("elf", "huge-shnum", patch(pie, 60, "<H", 0xfeff))
    put("elf", "shstrndx-out-of-range", patch(pie, 62, "<H", 0xfeff))
    put("elf", "phoff-past-end", patch(pie, 32, "<Q", len(pie) - 8))
    put("elf", "shoff-past-end", patch(pie, 40, "<Q", (1 << 63) + 5))
    # Section headers overlapping the ELF header and program headers.
    put("elf", "shdrs-over-header", patch(pie, 40, "<Q", 0))
    # .symtab with a zero / odd entsize, an out-of-range string table, a giant size.
    st = sec(pie, ".symtab")
    put("elf", "symtab-entsize-0", patch(pie, st["hdr"] + 56, "<Q", 0))
    put("elf", "symtab-entsize-1", patch(pie, st["hdr"] + 56, "<Q", 1))
    put("elf", "symtab-link-bad", patch(pie, st["hdr"] + 40, "<I", 0x7fff))
    put("elf", "symtab-huge-size", patch(pie, st["hdr"] + 32, "<Q", 1 << 40))
    put("elf", "symtab-off-past-end", patch(pie, st["hdr"] + 24, "<Q", len(pie) - 4))
    # Notes: build id with a huge namesz / descsz, a zero descsz.
    bid = sec(pie, ".note.gnu.build-id")
    put("elf", "note-huge-namesz", patch(pie, bid["off"], "<I", 0xfffffff0))
    put("elf", "note-huge-descsz", patch(pie, bid["off"] + 4, "<I", 0xfffffff0))
    put("elf", "note-descsz-0", patch(pie, bid["off"] + 4, "<I", 0))
    put("elf", "note-section-huge", patch(pie, bid["hdr"] + 32, "<Q", 1 << 40))
    # PT_NOTE only (no section headers), with a note running past the end.
    noshdr = patch(pie, 60, "<H", 0)
    noshdr = patch(noshdr, 40, "<Q", 0)
    put("elf", "no-shdrs", noshdr)
    for i in range(phnum):
        o = phoff + i * phentsize
        if struct.unpack_from("<I", pie, o)[0] == 4:  # PT_NOTE
            put("elf", "pt-note-past-end", patch(noshdr, o + 32, "<Q", 1 << 40))
            put("elf", "pt-note-offset-bad", patch(noshdr, o + 8, "<Q", len(pie) - 2))
            break
    # Overlapping PT_LOAD segments (the executable one over the first).
    for i in range(phnum):
        o = phoff + i * phentsize
        typ, flags = struct.unpack_from("<II", pie, o)
        if typ == 1 and flags & 1:
            put("elf", "load-overlap", patch(pie, o + 8, "<QQQQQ", 0, 0, 0, 1 << 62, 1 << 62))
            break
    # .gnu_debuglink without a NUL, with the CRC past the section, naming a path.
    dl = sec(link, ".gnu_debuglink")
    b = bytearray(link)
    b[dl["off"]:dl["off"] + dl["size"]] = b"x" * dl["size"]
    put("elf", "debuglink-no-nul", bytes(b))
    put("elf", "debuglink-crc-cut", patch(link, dl["hdr"] + 32, "<Q", dl["size"] - 2))
    b = bytearray(link)
    b[dl["off"]:dl["off"] + 8] = b"../../x\0"
    put("elf", "debuglink-path", bytes(b))
    b = bytearray(link)
    b[dl["off"]:dl["off"] + 8] = b"in.elf\0\0"  # the harness's own file name: itself
    put("elf", "debuglink-self", bytes(b))
    # Reproducer (fixed): a debuglink naming a directory (the harness's debug/) failed the
    # whole file with EISDIR instead of falling back to .dynsym.
    b = bytearray(link)
    b[dl["off"]:dl["off"] + 8] = b"debug\0\0\0"
    put("elf", "debuglink-directory", bytes(b))
    # Other classes and byte orders: a 32-bit and a big-endian object (no headers needed).
    src = "int f(int x) { return x + 1; }\nint g(void) { return f(2); }\n"
    for name, target in (("obj-i386.o", "i386-linux-gnu"), ("obj-ppc64-be.o", "powerpc64-linux-gnu")):
        cmd = ["clang", f"--target={target}", "-O1", "-c", "-x", "c", "-", "-o", f"/tmp/{name}"]
        if subprocess.run(cmd, input=src.encode()).returncode == 0:
            put("elf", name, read(f"/tmp/{name}"))
            os.unlink(f"/tmp/{name}")


# ---- text parsers ----------------------------------------------------------------------
def text_seeds():
    if not os.path.exists(f"{C}/maps/real"):  # addresses change at every run: made once
        put("maps", "real", read("/proc/self/maps"))
    put("maps", "edge",
        "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
        "7f0000000000-7f0000001000 rw-s 00000000 00:05 1 /dev/zero (deleted)\n"
        "7f0000001000-7f0000002000 ---p 00000000 00:00 0 \n"
        "7ffff7dd0000-7ffff7dd2000 r-xp 00000000 00:00 0                  [vdso]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n"
        "7f0000003000-7f0000004000 r-xp 00001000 fd:01 99 /usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0\n"
        "7f0000005000-7f0000006000 r-xp 00001000 fd:01 99 /a path/with spaces (deleted) (deleted)\n")
    put("maps", "no-newline", "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x")
    put("maps", "end-before-start", "00452000-00400000 r-xp 00000000 08:02 1 /x\n")
    put("maps", "huge-numbers",
        "ffffffffffffffffff-fffffffffffffffffff r-xp ffffffffffffffffffff 99999:99999 "
        "99999999999999999999999 /x\n")
    put("maps", "long-line", "00400000-00452000 r-xp 00000000 08:02 1 /" + "a" * 100000 + "\n")
    put("maps", "short-perms", "00400000-00452000 r- 00000000 08:02 1 /x\n")

    put("perfmap", "node",
        "7f0000001000 40 LazyCompile:~foo /srv/app.js:12\n"
        "0x7f0000002000 0x20 py::bar:/srv/app.py\n"
        "7f0000003000 10 Interpreter\n"
        "7f0000001000 40 recompiled at the same start\n")
    put("perfmap", "no-newline", "7f0000001000 40 partial")
    put("perfmap", "overlapping",
        "1000 1000 outer\n1800 10 inner\n1000 ffffffffffffffff wraps\nffffffffffffffff 2 top\n")
    put("perfmap", "zero-size-empty-name", "1000 0 zero\n2000 10 \n2000 10\n\n \n")
    put("perfmap", "long-line", "1000 10 " + "n" * 100000 + "\n")
    put("perfmap", "crlf", "1000 10 a\r\n2000\t10\tb\r\n")

    put("kallsyms", "real-ish",
        "0000000000000000 A fixed_percpu_data\n"
        "ffffffff81000000 T _text\n"
        "ffffffff81000000 T startup_64\n"
        "ffffffff81000000 t _stext\n"
        "ffffffff81001000 W weak_fn\n"
        "ffffffff81002000 d some_data\n"
        "ffffffffc0201000 t ext4_fn\t[ext4]\n"
        "ffffffffc0202000 T ext4_other\t[ext4]\n"
        "ffffffffc0300000 t bpf_prog_6deef7357e7b4530_x\t[bpf]\n")
    put("kallsyms", "hidden", "0000000000000000 T _text\n0000000000000000 t x\n")
    put("kallsyms", "no-newline", "ffffffff81000000 T _text")
    put("kallsyms", "bad-lines", "zzz T a\nffffffff81000000\nffffffff81000000 T\n"
        "ffffffff81000000 T name [unterminated\nffffffff81000000 T name\t[]\n")
    put("kallsyms", "long-line", "ffffffff81000000 T " + "k" * 100000 + "\n")

    if os.path.exists("/usr/lib/jvm/java-17-openjdk-amd64/release"):
        put("java_release", "openjdk-17", read("/usr/lib/jvm/java-17-openjdk-amd64/release"))
    put("java_release", "java8", 'JAVA_VERSION="1.8.0_392"\n')
    put("java_release", "unterminated", 'IMPLEMENTOR="x"\nJAVA_VERSION="21')
    put("java_release", "key-only", 'JAVA_VERSION="')
    put("java_release", "not-at-line-start", 'X_JAVA_VERSION="21"\nJAVA_VERSION="17"\n')
    put("java_release", "huge-version", 'JAVA_VERSION="99999999999999999999999.1"\n')
    put("java_release", "long-line", 'JAVA_VERSION="' + "1" * 100000 + '"\n')

    put("calls_attach", "php-env", b"\x0aphp\0-r\0x\0USE_ZEND_DTRACE=1\0A=b\0")
    put("calls_attach", "java-env",
        b"\x10java\0-XX:+ExtendedDTraceProbes\0JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes\0")
    put("calls_attach", "libpython", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0")
    put("calls_attach", "libruby", "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2")
    put("calls_attach", "php-fpm", "/usr/sbin/php-fpm8.2")
    put("calls_attach", "libjvm", "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so")
    put("calls_attach", "python-huge-version", "python99999999999999999999.99999999999999999999")
    put("calls_attach", "long-env", b"\x01JAVA_TOOL_OPTIONS=" + b"-" * 100000)

    put("demangle", "cxx", "_ZN13SharedRuntime19dtrace_method_entryEP10JavaThreadP6Method")
    put("demangle", "clone", "_Z3fooi.cold")
    put("demangle", "plain", "malloc")
    put("demangle", "bad", "_Z")
    put("demangle", "templates", "_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJRKiEEEvN9__gnu_cxx"
        "17__normal_iteratorIPiS1_EEDpOT_")

    # x86-64 prologues: glibc's free, posix_memalign, operator new; and cut-off ones.
    put("prologue", "free", bytes.fromhex("4885ff0f84a0000000"))
    put("prologue", "posix_memalign", bytes.fromhex("803d00000000007405"))
    put("prologue", "operator-new", bytes.fromhex("f30f1efa4885ffb8010000007405"))
    put("prologue", "push", bytes.fromhex("55"))
    put("prologue", "cut-rex", bytes.fromhex("48"))
    put("prologue", "cut-cmpb", bytes.fromhex("803d0000"))
    put("prologue", "mov-chain", bytes.fromhex("b801000000b802000000b803000000b80400000090"))


# ---- cgroups and pid namespaces (fuzz_cgroup: one input fed to every parser) -------------
def cgroup_seeds():
    ida = "d97ee933f3f1c78cdebf1fda15ae4408d4932bd6530faa8bcb7fcbcda9f9525b"
    idb = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
    v1 = "".join(f"{n}:{c}:/docker/{ida}\n" for n, c in
                 [(9, "name=systemd"), (8, "pids"), (4, "memory"), (2, "cpuacct"), (1, "cpu")])
    put("cgroup", "proc-hybrid-docker", v1 + f"0::/docker/{ida}\n")
    put("cgroup", "proc-v1-only", "12:pids:/user.slice\n1:name=systemd:/user.slice/session-1.scope\n")
    put("cgroup", "proc-root", "0::/\n")
    put("cgroup", "proc-deleted", "0::/gone (deleted)\n")
    put("cgroup", "proc-forged", f"0::/evil\n0::/docker/{ida}\n")
    put("cgroup", "proc-k8s-systemd",
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2b6cd4c4_9a3e_4f07_"
        f"a2b1_51a3d8e1f4a2.slice/cri-containerd-{ida}.scope\n")
    put("cgroup", "proc-k8s-cgroupfs",
        f"0::/kubepods/besteffort/pod0c5f0e6b-1b3e-4b8e-9f5e-2f1d3c4b5a69/{idb}\n")
    put("cgroup", "proc-crio", f"0::/machine.slice/crio-{idb}.scope\n")
    put("cgroup", "proc-podman-rootless",
        f"0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ida}.scope/container\n")
    put("cgroup", "proc-conmon", f"0::/machine.slice/libpod-conmon-{ida}.scope\n")
    put("cgroup", "proc-dind", f"0::/docker/{ida}/docker/{idb}\n")
    put("cgroup", "proc-lxc", "0::/lxc.payload.web01/init.scope\n")
    put("cgroup", "proc-buildkit", "0::/buildkit/x1p2eqqsmcplyah9t4u3zo0bt\n")
    put("cgroup", "path-docker-scope", f"/system.slice/docker-{ida}.scope/init.scope")
    put("cgroup", "path-long", "0::/" + "/".join(["a" * 255] * 20) + "\n")
    put("cgroup", "mounts-hybrid",
        "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
        "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n")
    put("cgroup", "mounts-escaped", "none /mnt/my\\040cg\\011x\\134y cgroup2 rw 0 0\n")
    put("cgroup", "mounts-long-line", "x /" + "a" * 9000 + " cgroup2 rw 0 0\ncgroup2 /real cgroup2 rw 0 0\n")
    put("cgroup", "procs", "1\n42\n30942\n")
    put("cgroup", "procs-bad", "0\n-1\n 14\n15x\n4294967296\n" + "1" * 100 + "\n7")
    put("cgroup", "status-container",
        "Name:\tsleep\nTgid:\t30942\nPid:\t30942\nNStgid:\t30942\t1\nNSpid:\t30942\t1\n")
    put("cgroup", "status-nested", "NSpid:\t4000\t37\t2\n")
    put("cgroup", "status-bad", "NSpid:\t5\t99999999999999999999\n")


# ---- otel_memory notes -------------------------------------------------------------------
def otel_seeds():
    """A library carrying the otel_memory probes (the e2e sampler), whole, cut, and its
    .note.stapsdt bytes alone."""
    out = "/tmp/otel-seed.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-g0", "-s",
                    "tests/targets/lib/otel_lib.c", "-o", out], check=True)
    so = read(out)
    os.unlink(out)
    put("otel_notes", "otel-lib.so", so)
    n = sec(so, ".note.stapsdt")
    put("otel_notes", "stapsdt-section", so[n["off"]:n["off"] + n["size"]])
    put("otel_notes", "cut-in-notes", so[:n["off"] + n["size"] // 2])


# ---- MiniDebugInfo ---------------------------------------------------------------------------
def minidebug_seeds():
    """heap_target built the Fedora way (`make build/targets/heap_target_minidebug`): its
    .gnu_debugdata whole and cut (first byte 0: xz as found), the ELF inside (1: compressed by
    the harness), an xz bomb; the whole file for the elf parser."""
    f = "build/targets/heap_target_minidebug"
    b = read(f)
    put("elf", "fedora-style-minidebuginfo", b)
    d = sec(b, ".gnu_debugdata")
    xz = b[d["off"]:d["off"] + d["size"]]
    put("minidebug", "heap-target-xz", b"\x00" + xz)
    put("minidebug", "heap-target-xz-cut", b"\x00" + xz[:len(xz) // 2])
    put("minidebug", "heap-target-elf", b"\x01" + lzma.decompress(xz))
    put("minidebug", "zeros-bomb", b"\x00" + lzma.compress(bytes(64 << 20)))


def debug_file_seeds():
    """What a debuginfod server could send for the stripped symfix fixture: its debug file, cut,
    its .symtab's entry size and link patched, another build's debug file (clang's), a DWARF 4
    build and a debug file with compressed sections (for the .debug_line reader)."""
    b = read("build/fixtures/symfix-pie.debug")
    put("debug_file", "symfix-pie.debug", b)
    put("debug_file", "cut-half", b[:len(b) // 2])
    t = sec(b, ".symtab")
    put("debug_file", "symtab-entsize-0", patch(b, t["hdr"] + 56, "<Q", 0))
    put("debug_file", "symtab-link-out", patch(b, t["hdr"] + 40, "<I", 0xffff))
    put("debug_file", "other-build", read("build/targets/static_alloc.debug"))
    # The line reader's other shapes: DWARF 4, zlib-compressed sections.
    put("debug_file", "dwarf4", read("build/fixtures/symfix-dwarf4"))
    put("debug_file", "compressed", read("build/fixtures/symfix-pie-z.debug"))


# ---- .eh_frame_hdr ----------------------------------------------------------------------------
def dwarf_inline_seeds():
    """The sections the inline walker reads, of the inlfix fixtures (gcc DWARF 5 and 4, clang
    with strx/addrx/rnglistx), as fuzz_dwarf_inline.c takes them: eight u32 sizes, then the
    sections; and one of them cut short; plus each fixture whole for fuzz_debug_file."""
    names = [".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str",
             ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists"]
    for fx in ("inlfix", "inlfix-dwarf4", "inlfix-clang"):
        b = read(f"build/fixtures/{fx}")
        secs = {s["sname"]: s for s in sections(b)}
        parts = [b[secs[n]["off"]:secs[n]["off"] + secs[n]["size"]] if n in secs else b""
                 for n in names]
        data = struct.pack("<8I", *[len(p) for p in parts]) + b"".join(parts)
        put("dwarf_inline", fx, data)
        put("debug_file", fx, b)
    put("dwarf_inline", "cut-info", data[:32 + len(parts[0]) // 2])


def dwz_seeds():
    """The dwz fixtures (GNU_ref_alt, GNU_strp_alt, DWARF 5's sup forms): for fuzz_dwarf_inline,
    the eight sections, then three sizes and the alternate file's .debug_info, .debug_abbrev and
    .debug_str; for fuzz_debug_file, the debug file, the separator, the alternate file (which the
    link names), and the same with the alternate file cut."""
    names = [".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str",
             ".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists"]
    for d in ("dwz", "dwzs", "dwz5"):
        b = read(f"build/fixtures/{d}/dwzfix-a.debug")
        a = read(f"build/fixtures/{d}/.dwz/dwzfix-common.debug")
        secs = {s["sname"]: s for s in sections(b)}
        asecs = {s["sname"]: s for s in sections(a)}
        parts = [b[secs[n]["off"]:secs[n]["off"] + secs[n]["size"]] if n in secs else b""
                 for n in names]
        alts = [a[asecs[n]["off"]:asecs[n]["off"] + asecs[n]["size"]] for n in names[:3]]
        put("dwarf_inline", d, struct.pack("<8I", *[len(p) for p in parts]) + b"".join(parts) +
            struct.pack("<3I", *[len(p) for p in alts]) + b"".join(alts))
        put("debug_file", d, b + b"\0DWZALT\0" + a)
        put("debug_file", d + "-alt-cut", b + b"\0DWZALT\0" + a[:len(a) // 2])


def fde_index_seeds():
    """The .eh_frame_hdr and .eh_frame of stripped files, as the harness takes them: both
    addresses, the header's length, the header, .eh_frame."""
    for f, name in [("build/targets/heap_target_stripped", "heap-target"),
                    ("build/fixtures/libsymfix-stripped.so", "libsymfix-stripped")]:
        b = read(f)
        h, e = sec(b, ".eh_frame_hdr"), sec(b, ".eh_frame")
        ha = struct.unpack_from("<Q", b, h["hdr"] + 16)[0]
        ea = struct.unpack_from("<Q", b, e["hdr"] + 16)[0]
        put("fde_index", name, struct.pack("<QQI", ha, ea, h["size"]) +
            b[h["off"]:h["off"] + h["size"]] + b[e["off"]:e["off"] + e["size"]])


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(sys.argv[0]), "../.."))
    elf_seeds()
    text_seeds()
    cgroup_seeds()
    otel_seeds()
    minidebug_seeds()
    fde_index_seeds()
    debug_file_seeds()
    dwarf_inline_seeds()
    dwz_seeds()
