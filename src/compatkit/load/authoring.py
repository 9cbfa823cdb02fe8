"""Writing patchset files: header templates, smoke test stubs, ``patchset.toml`` (text only).

These write into a patchset directory, never into a target environment.

>>> slug("Pass is_encoder_decoder=False to SchedulerConfig!")
'pass-is-encoder-decoder-false-to-schedulerconfig'
>>> smoke_name("patch-11")
'smoke/test_patch_11.py'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from compatkit.errors import PatchFormatError

TODO = "TODO"
SMOKE_TODO_MARK = "TODO(compatkit)"


def slug(text: str, limit: int = 48) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = "-".join(words)[:limit].strip("-")
    return out or "change"


def smoke_name(patch_id: str) -> str:
    return f"smoke/test_{re.sub(r'[^A-Za-z0-9]+', '_', patch_id).strip('_').lower()}.py"


def header(patch_id: str, title: str | None, today: date | None = None) -> str:
    """A DEP-3 header with the rationale fields left as TODO (``compatkit lint`` flags them)."""
    day = (today or date.today()).isoformat()
    return (
        f"Patch-Id: {patch_id}\n"
        f"Title: {title or f'{TODO}: one line saying what the patch changes'}\n"
        f"Symptom: {TODO}: the exact error text users see without this patch\n"
        f"Cause: {TODO}: the upstream change behind the breakage (module, function)\n"
        f"Fix: {TODO}: what the patch does, and why this fix and not the obvious alternative\n"
        f"Smoke-Test: {smoke_name(patch_id)}\n"
        f"Origin: vendor\n"
        f"Forwarded: no\n"
        f"Retire-When: {TODO}: the condition under which the patch can be dropped\n"
        f"Last-Update: {day}\n"
        "---\n"
    )


def smoke_stub(patch_id: str, modules: Sequence[str]) -> str:
    imports = "".join(f"import {m}  # noqa: F401\n" for m in modules)
    return (
        f'"""Smoke test for {patch_id}: must fail without the patch and pass with it."""\n\n'
        f"{imports}\n\n"
        f"def test_{re.sub(r'[^A-Za-z0-9]+', '_', patch_id).strip('_').lower()}() -> None:\n"
        f"    # {SMOKE_TODO_MARK}: reproduce the symptom here; `compatkit lint` fails until\n"
        f"    # this placeholder is replaced.\n"
        f'    raise AssertionError("{TODO}: write the smoke test for {patch_id}")\n'
    )


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string (ASCII, escaped) is a valid TOML basic string


def new_patchset_toml(
    name: str,
    version: str,
    summary: str,
    distribution: str,
    specifier: str,
    series: Sequence[str],
    requires: Sequence[str] = (),
) -> str:
    entries = "".join(f"  {_toml_str(s)},\n" for s in series)
    reqs = ", ".join(_toml_str(r) for r in requires)
    return (
        "[patchset]\n"
        f"name = {_toml_str(name)}\n"
        f"version = {_toml_str(version)}\n"
        f"summary = {_toml_str(summary)}\n"
        f"series = [\n{entries}]\n\n"
        "[target]\n"
        f"distribution = {_toml_str(distribution)}\n"
        f"specifier = {_toml_str(specifier)}\n"
        f"requires = [{reqs}]\n"
    )


_SERIES = re.compile(r"^(\s*series\s*=\s*\[)(.*?)(\])", re.DOTALL | re.MULTILINE)


def append_to_series(toml_text: str, entry: str) -> str:
    """``toml_text`` with ``entry`` added at the end of its ``series`` list, comments kept."""
    match = _SERIES.search(toml_text)
    if match is None:
        raise PatchFormatError("patchset.toml: no 'series = [...]' list to append to")
    inner = match.group(2)
    body = inner.rstrip()
    if "\n" in inner:
        indent = re.findall(r"\n([ \t]*)\S", inner)
        pad = indent[-1] if indent else "  "
        sep = "" if body.endswith(",") or not body.strip() else ","
        new_inner = f"{body}{sep}\n{pad}{_toml_str(entry)},\n"
    else:
        sep = ", " if body.strip() else ""
        new_inner = f"{body.rstrip(',')}{sep}{_toml_str(entry)}"
    return toml_text[: match.start(2)] + new_inner + toml_text[match.end(2) :]


def write_new(path: Path, text: str) -> None:
    """Create ``path`` atomically; refuse to overwrite an existing file (FileExistsError)."""
    from compatkit import atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, text, exclusive=True)
