"""The documentation site's generated pages and the facts its pages and README must keep
(issue 49): the command reference names every command and option of the real parser, a page
per bundled patchset and patch tells explain's story, every variable and exit code compatkit
has is documented, README stays two screens, and nothing installs compatkit by a bare name.

The site itself (built with warnings as errors, opened in Chromium) is tests/project/test_site.py
in ``nox -s docs``."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _ext(name: str) -> ModuleType:
    """A module of docs/ext (the Sphinx extension: not part of the compatkit package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, DOCS / "ext" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# The command reference


def test_the_command_reference_shows_every_command_and_option() -> None:
    cli = _ext("ckdocs_cli")
    parser = cli.full_parser()
    page = cli.render(parser)
    assert cli.missing(page, parser) == []
    paths = [" ".join(path) for path, _, _ in cli.walk(parser)]
    assert {"apply", "runtime", "fleet", "matrix", "explain"} <= set(paths), paths
    assert "_names" not in paths  # hidden, as --help hides it
    for flag in ("--allow-empty", "--exclude", "--keep-going", "--wheel-dir", "--pth", "--json"):
        assert f"`{flag}" in page, flag
    runtime = page.split("(cli-runtime)=", 1)[1].split("\n(cli-fleet", 1)[0]
    assert "`compatkit runtime`" in runtime and "install" in runtime  # a sub-verb
    # issue 47: each sub-verb is a parser of its own, with a section of its own
    assert {"runtime install", "runtime status", "matrix jobs", "fleet apply"} <= set(paths)
    status = page.split("(cli-runtime-status)=", 1)[1].split("\n(cli-", 1)[0]
    install = page.split("(cli-runtime-install)=", 1)[1].split("\n(cli-", 1)[0]
    assert "`--dir" in status and "--pth" not in status and "`--pth" in install


def test_the_reference_check_finds_a_missing_flag_or_command() -> None:
    cli = _ext("ckdocs_cli")
    parser = cli.full_parser()
    page = cli.render(parser)
    assert cli.missing(page.replace("--allow-empty", "--allow-all"), parser) == [
        "compatkit verify --allow-empty"
    ]
    start = page.index("(cli-revert)=")
    without = page[:start] + page[page.index("\n(cli-", start + 1) :]
    assert cli.missing(without, parser) == ["compatkit revert"]
    assert cli.missing(page.replace("--pth", "--p-t-h"), parser) == [
        "compatkit runtime install --pth"
    ]
    # a command (with a sub-verb of its own) the page was not generated for
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    extra = subs.add_parser("frobnicate", help="a command the page never saw")
    extra.add_argument("--frob", help="its flag")
    nested = extra.add_subparsers(dest="verb").add_parser("deeper", help="a nested sub-verb")
    nested.add_argument("--deep-flag")
    assert cli.missing(page, parser) == ["compatkit frobnicate", "compatkit frobnicate deeper"]
    assert "`--deep-flag" in cli.render(parser) and cli.missing(cli.render(parser), parser) == []


# The pages of the bundled patchsets


def test_a_page_per_bundled_patchset_and_patch_with_its_story(tmp_path: Path) -> None:
    from compatkit.load.registry import Registry

    pages = _ext("ckdocs_patchsets")
    written = {
        p.relative_to(tmp_path).as_posix() for p in pages.write(tmp_path, ROOT / "matrix.toml")
    }
    bundled = [ps for ps in Registry([]).all() if (ROOT / "patchsets" / ps.name).is_dir()]
    assert len(bundled) >= 7
    for ps in bundled:
        assert f"{ps.name}.md" in written
        for patch in ps.patches:
            text = (tmp_path / ps.name / f"{patch.id}.md").read_text()
            assert text.startswith(f"# {patch.id}: "), text[:80]
            for field in ("Symptom", "Cause", "Fix", "Retire When", "Origin"):
                assert f"\n## {field}\n" in text, (patch.id, field)
            first = patch.fields["symptom"].split()[0].strip("`")
            symptom = text.split("## Symptom", 1)[1].split("## Cause")[0]
            assert first in re.sub(r"\\(.)", r"\1", symptom)  # Markdown's escapes undone
            assert patch.fields["smoke-test"] in text.split("## Smoke test", 1)[1]
            assert patch.diff_text.strip().splitlines()[-1] in text
    six = (tmp_path / "speculators-vllm016" / "patch-6.md").read_text()
    proven = six.split("## Proven on", 1)[1].split("## The diff")[0]
    assert "`spec030-vllm0160`: `speculators==0.3.0`, `vllm==0.16.0`" in proven
    assert "spec030-vllm0171`" not in proven  # there patch-6's smoke test fails (0.17)
    assert "[speculators-vllm017](../speculators-vllm017/patch-6.md)" in six
    assert (
        "(shared: from `transformers-config-fallback`)"
        in (tmp_path / "transformers457-config-fallback" / "patch-15.md").read_text()
    )


def test_header_text_is_taken_literally_outside_code_spans() -> None:
    pages = _ext("ckdocs_patchsets")
    assert pages._inline("if not <tensor> raises *here* `a_b[0]`") == (
        "if not \\<tensor\\> raises \\*here\\* `a_b[0]`"
    )


# Facts the pages keep


def test_every_environment_variable_compatkit_reads_is_documented() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "src").rglob("*.py"))
    read = set(re.findall(r"\bCOMPATKIT_[A-Z_]+[A-Z]\b", source))
    page = (DOCS / "reference" / "environment.md").read_text()
    assert {"COMPATKIT_CACHE_DIR", "COMPATKIT_LOCK_TIMEOUT"} <= read
    assert sorted(v for v in read if f"`{v}`" not in page) == []


def test_every_exit_code_is_documented() -> None:
    from compatkit import errors

    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    table = (DOCS / "reference" / "exit-codes.md").read_text()
    assert codes and sorted(c for c in codes if f"\n| {c} |" not in table) == []


INSTALL = re.compile(r"\b(?:(?:pip3?|uv\s+pip|uv\s+tool|pipx)\s+install|uv\s+add)\b([^&|;#`\n]*)")
BARE_NAME = re.compile(r"compatkit(?:\[[\w,]+\])?(?:[=<>~!]=?[\w.*]+)?")


def bare_installs(text: str) -> list[str]:
    """Each install command in ``text`` that names compatkit itself (not a path or URL)."""
    found = []
    for match in INSTALL.finditer(text.replace("\\\n", " ")):
        words = [w.strip("'\"") for w in match.group(1).split()]
        if any(BARE_NAME.fullmatch(w) for w in words):
            found.append(match.group(0).strip())
    return found


def _doc_pages() -> list[Path]:
    generated = DOCS / "generated"
    pages = [p for p in DOCS.rglob("*.md") if generated not in p.parents]
    return [ROOT / "README.md", *pages]


def test_nothing_installs_compatkit_by_a_bare_name() -> None:
    """Not on PyPI: whoever registers the name would be installed by our own instructions."""
    found = [
        f"{path.relative_to(ROOT)}: {line!r}"
        for path in _doc_pages()
        for line in bare_installs(path.read_text())
    ]
    assert found == []


@pytest.mark.parametrize(
    ("line", "bare"),
    [
        ("uv pip install compatkit dist/team.whl", True),
        ("pip install 'compatkit[ray]'", True),
        ("pipx install compatkit==0.1.0", True),
        ("uv tool install -p 3.11 compatkit", True),
        ("uv add --dev compatkit", True),
        ('uv pip install "$COMPATKIT_SRC" dist/team.whl', False),
        ("uv tool install .", False),
        ("pip install -r requirements.txt /opt/compatkit", False),
        ("compatkit apply && pip install numpy", False),
        ("uv tool install 'git+URL@COMMIT'  # compatkit", False),
    ],
)
def test_the_bare_name_check_tells_one_from_the_other(line: str, bare: bool) -> None:
    assert bool(bare_installs(line)) is bare


def test_readme_is_two_screens_and_its_links_lead_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) >= 5, links
    assert [link for link in links if not (ROOT / link).is_file()] == []
    assert "docs/index.md" in links and "docs/getting-started.md" in links


def test_ci_builds_and_browses_the_site() -> None:
    """.ci/run runs ``docs`` (README's test line is the same: tests/cli/test_newuser.py), after
    ``compat_docs``, so the site shows this run's compatibility matrix."""
    sessions = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1].split("nox -s ")[1]
    names = sessions.split()
    assert "docs" in names and names.index("docs") > names.index("compat_docs"), names
    nox_text = (ROOT / "noxfile.py").read_text()
    assert '"tests/project/test_site.py"' in nox_text and '"-W"' in nox_text
