"""A transaction's file-system helper: one ``syncfs`` (``ctypes`` only when one commits)."""

from __future__ import annotations

import os
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
