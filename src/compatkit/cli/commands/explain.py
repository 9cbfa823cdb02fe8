"""``compatkit explain ID|"ERROR TEXT"|-``: the story of one patch, and its state here
(:mod:`compatkit.ops.explain` reads, ranks and chooses; this module renders)."""

from __future__ import annotations

from compatkit.cli.output import Output
from compatkit.ops import explain as ops

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

    from compatkit.cli.context import Context


def add_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("query", help="a patch id (patch-6, or PATCHSET:patch-6) or error text")


def render(result: ops.Explanation, out: Output) -> int:
    """The candidates (an error text), then each story; exit 1 when none is close enough."""
    out.lines(result.candidate_lines())
    failure = result.failure
    if failure is not None:
        return out.fail(result.to_json(), failure)
    for story in result.stories:
        if story.note:
            out.line(story.note)
        _story(out, story)
    out.result(result.to_json())
    return 0


def _story(out: Output, story: ops.Story) -> None:
    if out.json_mode:
        return
    if not out.rich:
        out.line(story.text())
        return
    from rich.padding import Padding
    from rich.syntax import Syntax
    from rich.text import Text

    (title, subtitle), *rest = story.sections()
    out.renderable(Text(title, style="bold"))
    out.renderable(Text(subtitle, style="dim"))
    for heading, body in rest:
        out.renderable(Text(heading, style="bold cyan"))
        if body:
            out.renderable(Padding(Text(body), (0, 0, 0, 2)))
    out.renderable(Syntax(story.diff, "diff", theme="ansi_dark", background_color="default"))


def _stdin_fd() -> int | None:
    import sys

    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # closed (`<&-`), or not a file
        return None


def run(args: Namespace, ctx: Context) -> int:
    fd = _stdin_fd() if args.query == "-" else None
    return render(ops.explain(ctx.registry, ctx.env, args.query, fd), ctx.out)
