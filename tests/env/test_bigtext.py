"""Issue 46 item 5: an installed file compatkit reads whole (to patch it, or to see whether a
patch applies to it) is bounded by ``bounded.TEXT``, well below the 4 GiB bound of a file that
is only hashed: a 2 GiB sparse module made ``status`` hold it several times over and end in
"internal error: MemoryError"; a module of short lines just under the bound made ``status``
compile it, which ran out of memory too (docs/reliability.md, 3f). Peak memory is measured in
a child process under a 1 GiB address-space cap (helpers.bigfiles)."""

from __future__ import annotations

import os

import pytest

from compatkit import bounded
from helpers import DEMO_FILES, Demo
from helpers.bigfiles import MIB, add_to_record, peak_rss, sparse, streamed


@pytest.mark.slow
def test_a_2gb_module_is_one_line_in_little_memory(demo: Demo) -> None:
    util = demo.venv.site / "demo" / "util.py"
    sparse(util, 2 << 30)  # a new file: never through uv's hardlink
    where = ["--patchset-dir", str(demo.patchsets)]
    too_large = f"compatkit: error: {util}: larger than 16 MiB ({2 << 30} bytes); not read"
    for args in (["status"], ["status", "demo-fix"], ["apply", "demo-fix"]):
        rc, peak = peak_rss(demo.venv.python, *where, *args)
        assert rc == 1 and peak < 150 * MIB, (args, rc, peak)
        code, _, err = demo.run(*args)
        if args[0] == "apply":  # its RECORD check hashes first, streamed: that is the refusal
            assert code == 1 and "demo/util.py does not match its RECORD hash" in err, err
        else:
            assert code == 1 and err.splitlines() == [too_large], err
    add_to_record(demo.venv.site, "demo", [f"demo/util.py,{streamed(util)},{2 << 30}"])
    rc, peak = peak_rss(demo.venv.python, *where, "apply", "demo-fix")  # RECORD agrees now
    assert rc == 1 and peak < 150 * MIB, (rc, peak)
    assert demo.run("apply", "demo-fix")[2].splitlines() == [too_large]
    assert util.stat().st_size == 2 << 30


@pytest.mark.slow
def test_a_module_under_the_bound_is_patched_in_bounded_memory(demo: Demo) -> None:
    """15 MiB of one-assignment lines (a generated table): what a patch is checked on and
    applied to, under the cap; revert puts every byte back."""
    util = demo.venv.site / "demo" / "util.py"
    body = DEMO_FILES["demo/util.py"] + b"".join(b"y%d = %d\n" % (i, i) for i in range(950_000))
    assert 14 * MIB < len(body) < bounded.TEXT
    tmp = util.with_name("util.py.tmp")
    tmp.write_bytes(body)
    os.replace(tmp, util)
    add_to_record(demo.venv.site, "demo", [f"demo/util.py,{streamed(util)},{len(body)}"])
    where = ["--patchset-dir", str(demo.patchsets)]
    for args in (["status"], ["apply", "demo-fix"], ["verify", "demo-fix"], ["revert", "demo-fix"]):
        rc, peak = peak_rss(demo.venv.python, *where, *args)
        assert rc == 0 and peak < 400 * MIB, (args, rc, peak)
    assert util.read_bytes() == body
