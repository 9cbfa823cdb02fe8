"""Write unified diffs that :mod:`compatkit.model.diff` reads back (pure).

Diffs are written with LF line endings and git-style ``a/`` and ``b/`` paths; compatkit applies
them to a file in its own line endings, so a CRLF file gets an LF patch that keeps it CRLF. A
new file's lines keep their own endings (a created file gets exactly its bytes). A change of
line endings alone is not written (it raises :class:`PatchFormatError`).

>>> print(file_diff("pkg/m.py", b"x = 1\\n", b"x = 2\\n"), end="")
diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -1 +1 @@
-x = 1
+x = 2
"""

from __future__ import annotations

import difflib

from compatkit.engine.lines import split_lines
from compatkit.errors import PatchFormatError

NO_EOL = "\\ No newline at end of file\n"


def _lines(data: bytes | None, path: str, exact: bool = False) -> list[str]:
    """The lines of ``data`` for difflib; ``exact``: with their own endings (a new file)."""
    if data is None:
        return []
    if b"\0" in data:
        raise PatchFormatError(f"{path}: binary files cannot be patched")
    return [content + (eol if exact else "\n" if eol else "") for content, eol in split_lines(data)]


def file_diff(path: str, old: bytes | None, new: bytes | None, context: int = 3) -> str:
    """The diff turning ``old`` into ``new`` (None: the file is absent); "" if no line differs."""
    a, b = _lines(old, path), _lines(new, path, exact=old is None)
    source = "/dev/null" if old is None else f"a/{path}"
    target = "/dev/null" if new is None else f"b/{path}"
    body = list(difflib.unified_diff(a, b, source, target, lineterm="\n", n=context))
    if not body:
        if old != new and old is not None and new is not None:
            raise PatchFormatError(f"{path}: only line endings changed, which a patch cannot carry")
        return ""
    text = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        text.append("new file mode 100644\n")  # git's way (git apply needs it)
    elif new is None:
        text.append("deleted file mode 100644\n")
    for line in body:
        text.append(line if line.endswith("\n") else line + "\n" + NO_EOL)
    return "".join(text)


def diff_files(pairs: dict[str, tuple[bytes | None, bytes | None]]) -> str:
    """One diff for several files, in path order; files that did not change are left out."""
    return "".join(file_diff(p, old, new) for p, (old, new) in sorted(pairs.items()))
