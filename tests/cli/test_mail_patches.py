"""Issue 46 item 8: a patch file that is a mail is read as ``git am`` reads it: a
quoted-printable body decoded (the diff too), encoded words of the subject decoded, and an mbox
of several mails refused with one line (a patch file is one patch, one id)."""

from __future__ import annotations

import os
import quopri
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import DEMO_FILES, PATCH_UTIL, Demo

LONG = "'hi=' + name + '" + "x" * 70 + "'"  # '=' and a line longer than QP allows
MESSAGE = f"""\
Patch-Id: patch-1
Symptom: ValueError: impolite greeting
Cause: demo.greet.hello() changed in demo 1.0
Fix: Say "hi=" instead.
Smoke-Test: smoke/test_patch_1.py
---
 demo/greet.py | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/demo/greet.py b/demo/greet.py
--- a/demo/greet.py
+++ b/demo/greet.py
@@ -1,3 +1,3 @@
 def hello(name):
-    return 'hello ' + name
+    return {LONG}
\x20
--\x20
2.43.0
"""


def _mail(sha: str = "0123456789abcdef0123456789abcdef01234567") -> bytes:
    """The message as a mail client sends it: quoted-printable, the subject in encoded words."""
    head = (
        f"From {sha} Mon Sep 17 00:00:00 2001\n"
        "From: A <a@example.org>\n"
        "Date: Mon, 1 Jan 2024 00:00:00 +0000\n"
        "Subject: [PATCH] =?UTF-8?q?Gr=C3=BC=C3=9Fe_politely?=\n"
        "MIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=UTF-8\n"
        "Content-Transfer-Encoding: quoted-printable\n\n"
    )
    body = quopri.encodestring(MESSAGE.encode())
    assert b"=3D" in body and b"=\n" in body  # both kinds of encoding are at stake
    return head.encode() + body


def _greet(demo: Demo) -> bytes:
    return (demo.venv.site / "demo" / "greet.py").read_bytes()


def test_a_quoted_printable_mail_is_applied_decoded_as_git_am_decodes_it(
    demo: Demo, tmp_path: Path
) -> None:
    (demo.patchsets / "demo-fix" / "patches" / "0001.patch").write_bytes(_mail())
    code, out, err = demo.run("apply", "demo-fix")
    assert code == 0, (out, err)
    expected = DEMO_FILES["demo/greet.py"].replace(b"'hello ' + name", LONG.encode())
    assert _greet(demo) == expected
    code, out, err = demo.run("explain", "patch-1")
    assert code == 0 and "Grüße politely" in out, out

    if shutil.which("git") is None:
        pytest.skip("git is not installed: the comparison with git am needs it")
    repo = tmp_path / "repo"
    (repo / "demo").mkdir(parents=True)
    (repo / "demo" / "greet.py").write_bytes(DEMO_FILES["demo/greet.py"])
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "HOME": str(tmp_path)}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run(["git", *cmd], cwd=repo, env=env, check=True)
    (tmp_path / "mail").write_bytes(_mail())
    subprocess.run(["git", "am", "-q", str(tmp_path / "mail")], cwd=repo, env=env, check=True)
    assert (repo / "demo" / "greet.py").read_bytes() == expected


def test_an_mbox_of_two_mails_is_refused_with_one_line(demo: Demo) -> None:
    second = "From fedcba9876543210fedcba9876543210fedcba98 Mon Sep 17 00:00:00 2001\n"
    second += "From: A <a@example.org>\nSubject: [PATCH 2/2] Change line 20\n\n" + PATCH_UTIL
    mbox = _mail() + second.encode()
    patches = demo.patchsets / "demo-fix" / "patches"
    (patches / "0001.patch").write_bytes(mbox)
    before = _greet(demo)
    for command in ("apply", "status", "verify"):
        code, out, err = demo.run(command, "demo-fix")
        assert code == 1 and out == "", (command, code, out, err)
        assert err.count("\n") == 1 and "0001.patch: holds 2 mails" in err, err
        assert "git mailsplit" in err, err
    assert _greet(demo) == before
