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


def file_diff(
    path: str,
    old: bytes | None,
    new: bytes | None,
    context: int = 3,
    moved: tuple[str, str] | None = None,
    modes: tuple[int | None, int | None] = (None, None),
) -> str:
    """The diff turning ``old`` into ``new`` (None: the file is absent); "" if no line differs
    and nothing else changes. ``moved``: (``"rename"`` or ``"copy"``, the source path whose
    bytes ``old`` are); ``modes``: the old and new permission bits a git header sets."""
    source_path = path if moved is None else moved[1]
    a, b = _lines(old, path), _lines(new, path, exact=old is None)
    source = "/dev/null" if old is None else f"a/{source_path}"
    target = "/dev/null" if new is None else f"b/{path}"
    body = list(difflib.unified_diff(a, b, source, target, lineterm="\n", n=context))
    header = _git_header(path, old, new, moved, modes)
    if not body and not header:
        if old != new and old is not None and new is not None:
            raise PatchFormatError(f"{path}: only line endings changed, which a patch cannot carry")
        return ""
    text = [f"diff --git a/{source_path} b/{path}\n", *header]
    for line in body:
        text.append(line if line.endswith("\n") else line + "\n" + NO_EOL)
    return "".join(text)


def _git_header(
    path: str,
    old: bytes | None,
    new: bytes | None,
    moved: tuple[str, str] | None,
    modes: tuple[int | None, int | None],
) -> list[str]:
    """git's extended header lines for a section: a new or deleted file's mode (git apply
    needs it), a mode change, a rename's or a copy's names."""
    if old is None:
        return [f"new file mode 100{modes[1] or 0o644:o}\n"]
    if new is None:
        return [f"deleted file mode 100{modes[0] or 0o644:o}\n"]
    lines = []
    if modes[1] is not None and modes[1] != modes[0]:
        lines += [f"old mode 100{modes[0] or 0o644:o}\n", f"new mode 100{modes[1]:o}\n"]
    if moved is not None:
        lines += [f"{moved[0]} from {moved[1]}\n", f"{moved[0]} to {path}\n"]
    return lines


def diff_files(pairs: dict[str, tuple[bytes | None, bytes | None]]) -> str:
    """One diff for several files, in path order; files that did not change are left out."""
    return "".join(file_diff(p, old, new) for p, (old, new) in sorted(pairs.items()))
