"""compatkit.engine.search: tracebacks and symptom text ranked against patch headers (pure), and the
corpus of real error texts (tests/explain_corpus) ranked against the bundled patchsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from compatkit.engine.search import PATH, Doc, Frame, parse_query, rank, tokens
from compatkit.load.registry import Registry
from compatkit.ops.explain import AHEAD, MIN_SCORE, find

CORPUS = Path(__file__).resolve().parents[1] / "explain_corpus"

TB = """\
Traceback (most recent call last):
  File "/home/x/.venv/lib/python3.11/site-packages/vllm/v1/core/sched/scheduler.py", line 713, in schedule
    new_blocks = self.kv_cache_manager.allocate_slots(
                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/home/x/.venv/lib/python3.11/site-packages/vllm/v1/core/block_pool.py", line 238, in cache_full_blocks
    assert len(request.block_hashes) >= num_full_blocks
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
AssertionError
"""  # noqa: E501

CHAINED = """\
Traceback (most recent call last):
  File "/v/transformers/dynamic_module_utils.py", line 757, in resolve
    answer = input(
EOFError: EOF when reading a line

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/v/transformers/dynamic_module_utils.py", line 769, in resolve
    raise ValueError(
ValueError: custom code which must be executed
Please pass the argument `trust_remote_code=True`.
"""


@pytest.mark.parametrize(
    ("text", "frames", "exceptions"),
    [
        (TB, [("scheduler.py", 713, "schedule"), ("block_pool.py", 238, "cache_full_blocks")],
         ["AssertionError"]),
        (CHAINED, [("dynamic_module_utils.py", 757, "resolve"),
                   ("dynamic_module_utils.py", 769, "resolve")],
         ["EOFError: EOF when reading a line",
          "ValueError: custom code which must be executed Please pass the argument "
          "`trust_remote_code=True`."]),
        ("AssertionError at vllm/v1/core/block_pool.py:238", [("block_pool.py", 238, None)],
         ["AssertionError at vllm/v1/core/block_pool.py:238"]),
        ('x/block_pool.py", line 238', [("block_pool.py", 238, None)], []),
        ("see vllm/v1/engine/core.py:133-146 and kv_cache_manager.py:180, :362",
         [("core.py", 133, None), ("core.py", 146, None), ("kv_cache_manager.py", 180, None),
          ("kv_cache_manager.py", 362, None)], []),
        ("E   TypeError: 'NoneType' object is not subscriptable", [],
         ["E   TypeError: 'NoneType' object is not subscriptable"]),
        ("hidden states are missing for prompts that share a prefix", [], []),
        ("see multiproc_executor.py", [("multiproc_executor.py", None, None)], []),
    ],
)  # fmt: skip
def test_parse_query(text: str, frames: list[tuple[str, int, str]], exceptions: list[str]) -> None:
    q = parse_query(text)
    assert [(f.file, f.line, f.function) for f in q.frames] == frames
    assert list(q.exceptions) == exceptions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the and for with this", {}),
        ("sharing shared shares share", {"shar": 1.0}),
        ("block_hashes", {"block_hashes": 1.0, "block": 0.5, "hash": 0.5}),
        ("Scheduler.__init__()", {"scheduler": 1.0, "init": 1.0}),
        ("ambiguous class", {"ambiguous": 1.0, "class": 1.0}),
    ],
)
def test_tokens(text: str, expected: dict[str, float]) -> None:
    assert tokens(text) == expected


def _docs() -> list[Doc]:
    return [
        Doc("pool", {"symptom": "AssertionError at vllm/v1/core/block_pool.py:238"}),
        Doc("sched", {"symptom": "TypeError: Scheduler.__init__() missing 'block_size'",
                      "cause": "vllm/v1/core/sched/scheduler.py:69 adds a parameter"}),
        Doc("eof", {"symptom": "EOFError: EOF when reading a line"}),
        Doc("remote", {"symptom": "ValueError: pass trust_remote_code=True for custom code"}),
        Doc("spec", {"title": "speculators site packages venv python lib home"}),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "first", "reason"),
    [
        # file.py", line N ⇄ file.py:N, the innermost frame first
        (TB, "pool", "frame block_pool.py:238 (in cache_full_blocks): named in the symptom"),
        ('File "/a/block_pool.py", line 238, in f', "pool", "frame block_pool.py:238 (in f)"),
        ("vllm/v1/core/block_pool.py:238", "pool", "frame block_pool.py:238: named"),
        # the last exception line outweighs an earlier one in a chained traceback
        (CHAINED, "remote", "words: "),
        # a frame's file without its line still counts, a little
        ('File "/a/scheduler.py", line 1, in f\nTypeError: missing', "sched", "frame file"),
    ],
)
def test_rank_first_and_why(text: str, first: str, reason: str) -> None:
    ranked = rank(parse_query(text), _docs())
    assert ranked[0].key == first
    assert any(w.startswith(reason) for w in ranked[0].why), ranked[0].why


TWO = """\
Traceback (most recent call last):
  File "/v/outer.py", line 10, in outer
KeyError: alpha beta

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/v/inner.py", line 20, in inner
ValueError: delta epsilon
"""


@pytest.mark.parametrize(
    ("docs", "first"),
    [
        # the same words, once in the earlier exception and once in the last one
        ({"a": {"symptom": "alpha beta"}, "b": {"symptom": "delta epsilon"}}, "b"),
        # two exact frames: the innermost one counts most
        ({"a": {"cause": "outer.py:10"}, "b": {"cause": "inner.py:20"}}, "b"),
        # an exact file:line beats a bare file name
        ({"a": {"cause": "inner.py:21"}, "b": {"cause": "outer.py:10"}}, "b"),
    ],
)
def test_weights(docs: dict[str, dict[str, str]], first: str) -> None:
    ranked = rank(parse_query(TWO), [Doc(k, f) for k, f in docs.items()])
    assert ranked[0].key == first and len(ranked) == 2
    assert ranked[0].score > ranked[1].score


def test_path_components_count_little() -> None:
    path = "/home/x/.venv/lib/python3.11/site-packages/speculators/data/gen.py"
    in_path = rank(parse_query(f'File "{path}", line 3, in f\nKeyError: 3'), _docs())
    assert all(c.key != "spec" or c.score < MIN_SCORE for c in in_path)
    spelt = parse_query(f"{path} speculators")  # the same word outside a path: full weight
    assert spelt.words["speculator"] == 1.0 and parse_query(path).words["speculator"] == PATH


def test_nothing_matches() -> None:
    assert rank(parse_query("nothing at all in common"), _docs()) == []


def _real(name: str) -> str:
    return (CORPUS / f"{name}.txt").read_text()


# name or text → the patch that must come first, clearly ahead of every other patch id
CASES = {
    **{p.stem: p.stem.split("-")[0] + "-" + p.stem.split("-")[1] for p in CORPUS.glob("*.txt")},
    "TypeError: 'NoneType' object is not subscriptable": "patch-6",
    "hidden states are missing tokens for prompts that share a prefix": "patch-5",
    'block_pool.py", line 238, in cache_full_blocks': "patch-5",
    "AssertionError at vllm/v1/core/block_pool.py:238": "patch-5",
    # compatkit smoke's one-line reason for patch-5 on the real unpatched stack
    "Failed: AssertionError at vllm/v1/core/block_pool.py:238: "
    "assert len(request.block_hashes) >= num_full_blocks": "patch-5",
    "the last request of a big batch gets truncated hidden states": "patch-8",
    "wrong attention scaling for long positions with Mistral Large 3": "patch-10",
    "Do you wish to run the custom code? [y/N]": "patch-1",
}


def test_the_corpus_is_all_there() -> None:
    assert len(list(CORPUS.glob("*.txt"))) == 9


@pytest.mark.parametrize(("query", "patch_id"), sorted(CASES.items()))
def test_corpus_ranks_the_right_patch_first(query: str, patch_id: str) -> None:
    text = _real(query) if (CORPUS / f"{query}.txt").is_file() else query
    matches, found = find(Registry([]), text)
    assert found[0][2].id == patch_id, [(c.key, c.score) for c, _, _ in found]
    assert matches and {p.id for _, p in matches} == {patch_id}
    others = [c.score for c, _, p in found if p.id != patch_id]
    assert not others or found[0][0].score >= AHEAD * max(others)


def test_the_19_line_traceback_still_finds_its_frame() -> None:
    text = _real("patch-5-block-pool")
    assert len(text.splitlines()) >= 19
    (best, ps, patch), *_ = find(Registry([]), text)[1]
    assert (ps.name, patch.id) == ("speculators-vllm016", "patch-5")
    assert "frame block_pool.py:238 (in cache_full_blocks): named in the symptom" in best.why


def test_frames_are_parsed_from_the_real_traceback() -> None:
    q = parse_query(_real("patch-5-block-pool"))
    assert q.frames[-1] == Frame("block_pool.py", 238, "cache_full_blocks")
    assert q.exceptions == ("AssertionError",)
