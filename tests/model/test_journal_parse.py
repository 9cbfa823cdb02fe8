"""model/journal.parse: every malformed entry of a journal (untrusted input, edited by anyone who
can write the environment) refused with its own one-line reason naming the entry."""

from __future__ import annotations

import json
from hashlib import sha256

import pytest

from compatkit.model.journal import Entry, JournalError, index, parse

INFO = "pkg-1.0.dist-info"
BLOBS = b"x = 1\n"
GOOD = json.loads(index(INFO, [Entry("pkg/m.py", BLOBS, None, 0o644, 1)]))["entries"][0]
SHA = sha256(BLOBS).hexdigest()


def _parse(*entries: object) -> list[Entry]:
    doc = json.loads(index(INFO, []))
    doc["entries"] = list(entries)
    return parse(json.dumps(doc).encode(), BLOBS, INFO)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("pkg/m.py", "not an object"),
        ({"path": 3}, "a path is int, not a string"),
        ({"path": "pkg/a.py", "move_to": "pkg/b.py", "after": None}, "unexpected keys ['after']"),
        ({"path": "pkg/n.py", "after": "abc"}, "pkg/n.py: 'after' is not a SHA-256"),
        ({"path": "pkg/n.py", "after": SHA, "mode": 420}, "unexpected keys for a created file"),
        ({**GOOD, "extra": 1}, "pkg/m.py: keys ["),
        ({**GOOD, "before": [0]}, "pkg/m.py: 'before' is not [offset, length]"),
        ({**GOOD, "before": [0, 99]}, "bytes 0-99 are outside the 6-byte blob file"),
        ({**GOOD, "sha256": "0" * 64}, "the saved bytes do not match their SHA-256"),
        ({**GOOD, "mode": 0o17777}, "pkg/m.py: 'mode' is not a file mode"),
        ({**GOOD, "mode": "644"}, "pkg/m.py: 'mode' is not a file mode"),
        ({**GOOD, "mtime_ns": -1}, "pkg/m.py: 'mtime_ns' is not a time"),
    ],
)
def test_a_malformed_entry_is_refused_with_its_reason(entry: object, reason: str) -> None:
    assert _parse(GOOD)[0].before == BLOBS  # the same journal with a sound entry parses
    with pytest.raises(JournalError) as caught:
        _parse(entry)
    assert caught.value.message.startswith("entry 1: ") and reason in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    "entries",
    [
        [GOOD, GOOD],
        [{"path": "pkg/a.py", "move_to": "pkg/a.py"}],
        [{"path": "pkg/a.py", "move_to": "pkg/b.py"}, {"path": "pkg/c.py", "move_to": "pkg/b.py"}],
    ],
)
def test_a_path_named_twice_is_refused(entries: list[object]) -> None:
    with pytest.raises(JournalError, match="is named twice"):
        _parse(*entries)
