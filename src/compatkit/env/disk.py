"""The two file-system helpers of every transaction: one ``syncfs``, and removing a journal.

Both keep imports off the fixed cost of ``apply`` and ``revert`` (benchmark P5): ``ctypes``
only when a transaction commits, ``shutil`` only for a tree that is not a plain journal folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

JOURNAL = "compatkit-journal"  # in a distribution's .dist-info, while a transaction runs


def sync_fs(path: Path) -> None:
    """Flush the file system holding ``path`` (one syncfs instead of thousands of fsyncs)."""
    import ctypes  # here, not at the top: read-only commands never need it (start-up time)

    fd = os.open(path, os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def rmtree(path: Path, ignore_errors: bool = True) -> None:
    """shutil.rmtree. A journal folder (regular files only, no subfolders) is removed without
    importing shutil, a fixed cost of every apply and revert (benchmark P5); anything else, or
    any error, goes to shutil.rmtree itself."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        try:
            names = [os.path.join(path, n) for n in os.listdir(path)]
            if all(stat.S_ISREG(os.lstat(n).st_mode) for n in names):
                for name in names:
                    os.unlink(name)
                os.rmdir(path)
                return
        except OSError:
            pass  # shutil.rmtree reports (or ignores) it
    import shutil

    shutil.rmtree(path, ignore_errors=ignore_errors)
