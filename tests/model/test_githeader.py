"""git's extended header lines live in their own module (compatkit.model.githeader), which the
diff reader imports only for a section that has them: a plain ``diff -u`` patch, or a ``git
diff`` of edits without ``index`` or mode lines (the demo's), never loads it (start-up time,
tests/cli/test_startup_writes.py pins apply's modules)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from compatkit.errors import PatchFormatError
from compatkit.model.diff import parse_diff

PLAIN = "--- a/p/m.py\n+++ b/p/m.py\n@@ -1 +1 @@\n-x\n+y\n"
GIT_EDIT = "diff --git a/p/m.py b/p/m.py\n" + PLAIN
RENAME = (
    "diff --git a/p/m.py b/p/n.py\nsimilarity index 90%\nrename from p/m.py\nrename to p/n.py\n"
)
QUOTED = '--- "a/p/t\\303\\251st.py"\n+++ "b/p/t\\303\\251st.py"\n@@ -1 +1 @@\n-x\n+y\n'


@pytest.mark.parametrize(
    ("diff", "loaded"), [(PLAIN, False), (GIT_EDIT, False), (RENAME, True), (QUOTED, True)]
)
def test_the_reader_loads_git_header_checks_only_for_sections_that_have_them(
    diff: str, loaded: bool
) -> None:
    code = (
        "import sys\nfrom compatkit.model.diff import parse_diff\n"
        f"fd, = parse_diff({diff!r}, 'p')\n"
        "print(fd.kind, fd.path, 'compatkit.model.githeader' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == str(loaded), out.stdout


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("old mode 100644\nnew mode 120000\n", "symlinks (mode 120000) are not supported"),
        ("index 1234567..89abcde 160000\n", "submodules (mode 160000) are not supported"),
        ("new file mode 100644\ndeleted file mode 100644\n", "inconsistent header lines"),
        ("rename from p/m.py\n", "rename header without both names"),
        ("old mode 100644\nnew mode 100600\n", "file mode 100600 is not supported"),
    ],
)
def test_the_moved_checks_refuse_as_before(header: str, message: str) -> None:
    with pytest.raises(PatchFormatError, match=re.escape(message)):
        parse_diff("diff --git a/p/m.py b/p/m.py\n" + header + PLAIN, "p")


def test_a_quoted_name_and_a_rename_read_as_before() -> None:
    (fd,) = parse_diff(QUOTED, "p")
    assert fd.path == "p/tést.py"
    (fd,) = parse_diff(RENAME, "p")
    assert (fd.kind, fd.source, fd.path, fd.hunks) == ("rename", "p/m.py", "p/n.py", ())
