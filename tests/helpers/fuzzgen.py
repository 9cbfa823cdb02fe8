"""hypothesis strategies for patch files: near-valid diffs of the demo wheel, then broken.

A generated patch starts from hunks that match the installed demo files (so a fair share
applies) and is then damaged: wrong counts and starts, hostile paths (``..``, absolute, NUL,
non-UTF-8, symlinks, directories, metadata, other distributions, over-long), extended git headers
(binary, rename, mode), huge headers, mixed and lone-CR line endings, NUL and binary bytes, and
byte-level mutations of the result or of a seed corpus file.

:func:`project_toml` and :func:`bad_options` (issue 25) draw a project's ``[tool.compatkit]``
table (entries that leave the project, over-long, control characters, wrong types, tables and
arrays nested thousands deep) and command lines whose option values are the wrong kind of
thing (``-o`` naming a folder, a device or a path below a file; ``--timeout nan``).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from helpers import DEMO_FILES

CORPUS = Path(__file__).parents[1] / "fuzz_corpus"
FILES = {p: d.decode().splitlines() for p, d in DEMO_FILES.items()}

HOSTILE_PATHS = [
    "../evil.py",
    "demo/../../evil.py",
    "demo/../demo/greet.py",
    "/tmp/compatkit-fuzz-evil.py",
    "/etc/passwd",
    "C:/evil.py",
    "demo\\greet.py",
    "demo/\x00greet.py",
    "demo/\udcff\udcfe.py",  # non-UTF-8 bytes 0xff 0xfe once encoded with surrogateescape
    "demo/\x1b[31mred.py",
    "demo/\x85nel.py",
    "demo-1.0.dist-info/RECORD",
    "demo-1.0.dist-info/compatkit/demo-fix.json",
    "demo-1.0.dist-info",
    "other/mod.py",
    "demo//greet.py",
    "./demo/greet.py",
    "demo/./greet.py",
    "demo/greet.py/inner.py",
    "demo/__pycache__",
    "demo",
    "demo/link/evil.py",
    "demo/filelink.py",
    "demo/" + "x" * 300 + ".py",
    "demo/" + "/".join(["d"] * 600) + "/x.py",
    "demo/" + "/".join(["d"] * 1500) + "/x.py",  # os.makedirs recursed past the limit (#25)
    "demo/" + "/".join(["d" * 200] * 30) + "/x.py",  # over PATH_MAX: ENAMETOOLONG
    "demo/ greet.py",
    "demo/greet.py\t2024-01-01 00:00:00",
    "",
    "a",
    "b/",
]
GOOD_PATHS = [*FILES, "demo/new_module.py", "demo/sub/new.py"]
VALID_HEADER = (
    "Patch-Id: patch-1\nTitle: t\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_patch_1.py\n---\n"
)
EOLS = ["\n", "\n", "\n", "\r\n", "\r"]
JUNK = st.binary(max_size=24).map(lambda b: b.decode("latin-1"))
SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30)
LINE_TEXT = st.one_of(
    st.sampled_from(["x = 1", "", "    pass", "line20 = 200", "\x00", "\udcff", "\\ No newline"]),
    st.text(max_size=30),
    JUNK,
)


@st.composite
def hunk(draw: st.DrawFn, path: str | None, kind: str, clean: bool = False) -> str:
    """One hunk, matching ``path``'s content when known, then maybe damaged."""
    lines = FILES.get(path or "", [])
    body: list[str] = []
    added = SAFE_TEXT if clean else LINE_TEXT
    if kind == "create" or not lines:
        body = ["+" + draw(added) for _ in range(draw(st.integers(int(clean), 4)))]
        old_start = old_len = 0
    elif kind == "delete":
        body = ["-" + line for line in lines]
        old_start, old_len = 1, len(lines)
    else:
        start = draw(st.integers(0, len(lines) - 1))
        end = draw(st.integers(start + 1, min(len(lines), start + 6)))
        for text in lines[start:end]:
            op = draw(st.sampled_from([" ", " ", "-", "-+"]))
            body += [f" {text}"] if op == " " else [f"-{text}"]
            if op == "-+" or draw(st.integers(0, 5)) == 0:
                body.append("+" + draw(added))
        old_start, old_len = start + 1, end - start
    new_len = sum(1 for b in body if b[:1] in " +")
    new_start = 0 if kind == "delete" else max(old_start, 1) if new_len else 0
    if clean:
        return "\n".join([f"@@ -{old_start},{old_len} +{new_start},{new_len} @@", *body]) + "\n"
    if draw(st.integers(0, 3)) == 0:  # wrong counts or starts
        old_start += draw(st.integers(-3, 3))
        old_len += draw(st.integers(-2, 2))
        new_len += draw(st.integers(-2, 2))
    header = f"@@ -{old_start},{old_len} +{new_start},{new_len} @@"
    if draw(st.integers(0, 9)) == 0:
        header = draw(
            st.sampled_from(
                ["@@ -1 +1 @@", "@@ @@", "@@ -x,y +z @@", "@@ -1,99999999999999999999 +1 @@", "@@"]
            )
        )
    if draw(st.integers(0, 9)) == 0 and body:
        at = draw(st.integers(0, len(body)))
        body.insert(at, "\\ No newline at end of file")
    if draw(st.integers(0, 9)) == 0 and body:
        del body[draw(st.integers(0, len(body) - 1))]
    return "\n".join([header, *body]) + "\n"


@st.composite
def file_section(draw: st.DrawFn, clean: bool = False) -> str:
    """One file's diff; ``clean``: an existing file modified or a new one created, intact."""
    if clean:
        path = draw(st.sampled_from(GOOD_PATHS))
        kind = "modify" if path in FILES else "create"
    else:
        paths = [st.sampled_from(GOOD_PATHS), st.sampled_from(HOSTILE_PATHS), st.text(max_size=20)]
        path = draw(st.one_of(paths))
        kind = draw(st.sampled_from(["modify", "modify", "create", "delete"]))
    git = draw(st.booleans())
    a_pre = git or draw(st.booleans())
    b_pre = git or (a_pre if clean else draw(st.booleans()))
    a = "/dev/null" if kind == "create" else (f"a/{path}" if a_pre else path)
    b = "/dev/null" if kind == "delete" else (f"b/{path}" if b_pre else path)
    out = []
    if git:
        out.append(f"diff --git a/{path} b/{path}")
        extra = ("new file mode 100644" if kind == "create" else None) if clean else draw(
            st.sampled_from(
                [
                    None, None, None,
                    "index 1234567..89abcde 100644",
                    "new file mode 100644" if kind == "create" else "deleted file mode 100644",
                    "old mode 100644\nnew mode 100755",
                    "similarity index 90%\nrename from demo/greet.py\nrename to demo/x.py",
                    "new file mode 120000",
                    "Binary files a/x and b/x differ",
                    "GIT binary patch\nliteral 5\nMcmZ?wb8~Bm\n",
                ]
            )
        )  # fmt: skip
        if extra:
            out.append(extra)
    out += [f"--- {a}", f"+++ {b}"]
    for _ in range(1 if clean else draw(st.integers(0 if kind != "modify" else 1, 3))):
        out.append(draw(hunk(path, kind, clean)).rstrip("\n"))
    return "\n".join(out) + "\n"


@st.composite
def header(draw: st.DrawFn) -> str:
    choice = draw(st.integers(0, 6))
    if choice == 0:
        return ""
    if choice == 1:  # huge header
        return "Patch-Id: big\nTitle: " + "t" * draw(st.integers(1000, 200_000)) + "\n---\n"
    if choice == 2:
        return "".join(f"X-Field-{i}: {i}\n" for i in range(draw(st.integers(100, 5000)))) + "---\n"
    if choice == 3:
        return "From 0123456789abcdef Mon Sep 17 00:00:00 2001\nSubject: [PATCH 1/2] fuzz\n\n---\n"
    if choice == 4:
        return f"Patch-Id: {draw(st.text(max_size=20))}\nTitle: {draw(JUNK)}\n---\n"
    return VALID_HEADER


def _line_endings(draw: st.DrawFn, text: str) -> str:
    mode = draw(st.integers(0, 4))
    if mode < 3:
        return text
    lines = text.split("\n")
    if mode == 3:
        return "\r\n".join(lines)
    return "".join(line + draw(st.sampled_from(EOLS)) for line in lines)


@st.composite
def mutate(draw: st.DrawFn, data: bytes) -> bytes:
    """A few byte-level edits: flips, inserts (NUL, 0xff, newlines), deletions, truncation."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.integers(0, 4))
        at = draw(st.integers(0, len(buf)))
        if op == 0 and buf and at < len(buf):
            buf[at] = draw(st.integers(0, 255))
        elif op == 1:
            buf[at:at] = draw(
                st.sampled_from(
                    [b"\x00", b"\xff\xfe", b"\n", b"\r", b"@@", b"\n+", b"\n-", b"\n\\"]
                )
            )
        elif op == 2:
            del buf[at : at + draw(st.integers(1, 40))]
        elif op == 3:
            buf = buf[:at]
        else:
            buf[at:at] = draw(st.binary(min_size=1, max_size=64))
    return bytes(buf)


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_file())


@st.composite
def patch_bytes(draw: st.DrawFn) -> bytes:
    """One patch file's bytes."""
    source = draw(st.integers(0, 9))
    if source == 0:
        return draw(st.binary(max_size=2000))
    if source == 1:
        seeds = corpus_files()
        return draw(mutate(draw(st.sampled_from(seeds)).read_bytes())) if seeds else b""
    if source < 5:  # intact: different files, valid header; most of these apply
        paths: set[str] = set()
        sections = []
        for _ in range(draw(st.integers(1, 3))):
            section = draw(file_section(clean=True))
            name = section.split("+++ ", 1)[1].split("\n", 1)[0]
            if name not in paths:
                paths.add(name)
                sections.append(section)
        text = _line_endings(draw, VALID_HEADER + "".join(sections))
        return text.encode("utf-8", "surrogateescape")
    sections = [draw(file_section()) for _ in range(draw(st.integers(1, 3)))]
    text = _line_endings(draw, draw(header()) + "".join(sections))
    data = text.encode("utf-8", "surrogateescape")
    return draw(mutate(data)) if draw(st.integers(0, 3)) == 0 else data


# --- issue 25: project configuration and option values -----------------------------------

DIR_ENTRIES = [
    "patches",
    ".",
    "",
    "/etc",
    "/tmp",
    "~",
    "~/patches",
    "..",
    "../patches",
    "sub/../..",
    "patches/../patches",
    "link-out",
    "a-file",
    "fifo",
    "missing",
    "x" * 300,
    "x" * 5000,
    "/".join(["d"] * 3000),
    "a\x1b[31m",
    "a\x00b",
    "a\nb",
]
TIMEOUTS = ["nan", "NaN", "-5", "0", "-0", "inf", "-inf", "1e999", "1e-400", "", "0x10", "five"]
# (command, option) pairs that name where a command writes; every value drawn is wrong for it
OUTPUTS = [
    (["sbom"], "-o", ["a-folder", "a-file/x.json", "/dev/null", "fifo", "x" * 300, ""]),
    (["wheel", "demo-fix", "--offline"], "-o", ["a-file", "a-file/sub", "/dev/null", "x" * 300]),
    (["prove", "demo-fix"], "-o", ["a-file", "a-file/sub", "fifo", "x" * 300]),
    (["matrix", "report"], "--results", ["a-file", "a-file/sub", "/dev/null"]),
    (["matrix", "report", "--results", "a-folder"], "-o", ["a-folder", "a-file/x", "fifo"]),
    (["matrix", "run", "c"], "-o", ["a-file", "fifo", "x" * 300]),
    (["rebase", "demo-fix", "--target", "demo==2.0"], "-o", ["a-file", "a-file/sub", "fifo"]),
]


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (control characters as \\u escapes)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@st.composite
def nested(draw: st.DrawFn) -> str:
    """A TOML value nested 1 to 20,000 deep (arrays or inline tables)."""
    depth = draw(st.sampled_from([1, 10, 100, 999, 1000, 3000, 20_000]))
    if draw(st.booleans()):
        return "[" * depth + "1" + "]" * depth
    return "{a = " * depth + "1" + "}" * depth


@st.composite
def project_toml(draw: st.DrawFn) -> bytes:
    """A pyproject.toml with a [tool.compatkit] table, near-valid, then maybe broken."""
    names = draw(st.lists(st.sampled_from(["demo-fix", "missing", "", "../x", "a b"]), max_size=3))
    dirs = draw(st.lists(st.sampled_from(DIR_ENTRIES), max_size=3))
    policy = draw(st.sampled_from(['"strict"', '"warn"', '"maybe"', "1", "[]"]))
    lines = ["[tool.compatkit]"]
    lines.append("patchsets = [" + ", ".join(toml_string(n) for n in names) + "]")
    lines.append("patchset-dirs = [" + ", ".join(toml_string(d) for d in dirs) + "]")
    lines.append(f"on-mismatch = {policy}")
    kind = draw(st.integers(0, 5))
    if kind == 1:  # a key's value nested thousands deep
        key = draw(st.sampled_from(["patchsets", "patchset-dirs", "on-mismatch", "extra"]))
        lines = [ln for ln in lines if not ln.startswith(key)] + [f"{key} = {draw(nested())}"]
    elif kind == 2:  # the wrong type
        key = draw(st.sampled_from(["patchsets", "patchset-dirs"]))
        value = draw(st.sampled_from(["1", '"x"', "{a = 1}", "[1]"]))
        lines = [ln for ln in lines if not ln.startswith(key)] + [f"{key} = {value}"]
    elif kind == 3:
        value = draw(st.sampled_from(["1", '"x"', "[]"]))
        lines = ["[tool]", f"compatkit = {value}"]
    data = ("\n".join(lines) + "\n").encode()
    return draw(mutate(data)) if kind == 4 else data


@st.composite
def bad_options(draw: st.DrawFn) -> list[str]:
    """A command line whose one option value is wrong for its option."""
    if draw(st.integers(0, 3)) == 0:
        value = draw(st.sampled_from(TIMEOUTS))
        spelled = draw(st.sampled_from([["--timeout", value], [f"--timeout={value}"]]))
        return ["fleet", "status", "x", *spelled]
    command, option, values = draw(st.sampled_from(OUTPUTS))
    return [*command, option, draw(st.sampled_from(values))]
