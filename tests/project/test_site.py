"""The documentation site in a real browser (issue 49): Debian's Chromium, driven by Selenium
through the system's chromedriver, on the site served over HTTP on 127.0.0.2.

Every page loads with no console error; the navigation reaches every page; the site's search
finds patch-6 and leads to its page; the compatibility table shows its rows. ``nox -s docs``
builds the site (warnings as errors) and runs this file on it (``COMPATKIT_DOCS_HTML``); run
alone, it builds the site itself, and is skipped without Sphinx, Selenium or Chromium (never
under ``nox -s docs``, where a missing piece fails)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
GIVEN = os.environ.get("COMPATKIT_DOCS_HTML", "")
pytestmark = pytest.mark.slow
# pages Sphinx makes that no navigation links to: the search page and the general index
UNLISTED = {"search.html", "genindex.html"}


def _need(what: str, ok: bool) -> None:
    if not ok:
        if GIVEN:  # under nox -s docs: nothing may be missing
            pytest.fail(f"the browser test needs {what}")
        pytest.skip(f"needs {what} (nox -s docs installs it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if GIVEN:
        return Path(GIVEN)
    _need("sphinx, furo and myst-parser (the docs extra)", _importable("sphinx", "furo"))
    out = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "sphinx", "-W", "-n", "-q", "-b", "html", "docs", str(out)]
    build = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    return out


def _importable(*names: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(n) is not None for n in names)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base(site: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.2", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    _need("selenium (the docs extra)", _importable("selenium"))
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    _need("Debian's chromium and chromium-driver", bool(chromium and driver))
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=driver)
    chrome = webdriver.Chrome(options=options, service=service)
    chrome.set_page_load_timeout(60)
    try:
        yield chrome
    finally:
        chrome.quit()


def _errors(browser: Any) -> list[str]:
    """The console's errors since the last call (the log is emptied as it is read)."""
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _pages(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*.html")} - UNLISTED


def _by() -> Any:
    return pytest.importorskip("selenium.webdriver.common.by").By


def _nav_links(browser: Any, base: str) -> set[str]:
    By = _by()
    found = set()
    for link in browser.find_elements(By.CSS_SELECTOR, ".sidebar-tree a.reference"):
        href = urldefrag(link.get_attribute("href") or "")[0]
        if href.startswith(base):
            found.add(href[len(base) :] or "index.html")
    return found


def test_every_page_loads_without_errors_and_the_navigation_reaches_it(
    site: Path, base: str, browser: Any
) -> None:
    pages = _pages(site)
    assert {"index.html", "generated/cli.html", "compatibility.html"} <= pages
    assert "generated/patchsets/speculators-vllm016/patch-6.html" in pages
    seen: set[str] = set()
    todo = ["index.html"]
    problems: dict[str, list[str]] = {}
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        browser.get(urljoin(base, page))
        assert browser.title and "404" not in browser.title, page
        errors = _errors(browser)
        if errors:
            problems[page] = errors
        todo += sorted(_nav_links(browser, base) - seen)
    assert problems == {}
    assert sorted(pages - seen) == []  # a page no navigation leads to
    assert sorted(seen - pages) == []  # a link to a page that is not there


def test_search_finds_patch_6_and_leads_to_its_page(base: str, browser: Any) -> None:
    By = _by()
    WebDriverWait = pytest.importorskip("selenium.webdriver.support.ui").WebDriverWait

    browser.get(urljoin(base, "index.html"))
    box = browser.find_element(By.CSS_SELECTOR, "input.sidebar-search")
    box.send_keys("patch-6")
    box.submit()
    results = ".search li a"
    WebDriverWait(browser, 30).until(
        lambda b: (
            b.find_elements(By.CSS_SELECTOR, results)
            or "did not match" in b.find_element(By.ID, "search-results").text
        )
    )
    links = browser.find_elements(By.CSS_SELECTOR, results)
    targets = [urlparse(a.get_attribute("href")).path for a in links]
    assert targets and targets[0].endswith("/patch-6.html"), targets[:5]
    links[0].click()
    WebDriverWait(browser, 30).until(lambda b: "patch-6" in b.title)
    heading = browser.find_element(By.TAG_NAME, "h1").text
    assert heading.startswith("patch-6: ") and "collective_rpc" in heading, heading
    assert _errors(browser) == []


def test_the_compatibility_table_shows_its_rows(base: str, browser: Any) -> None:
    By = _by()
    source = (ROOT / "docs" / "compatibility.md").read_text()
    section = source.split("## Patches × cells", 1)[1].split("\n## ", 1)[0]
    rows = [
        r for r in section.splitlines() if r.startswith("| ") and not r.startswith("| patchset")
    ]
    assert len(rows) >= 10, rows
    browser.get(urljoin(base, "compatibility.html"))
    tables = browser.find_elements(By.CSS_SELECTOR, "article table")
    table = next(t for t in tables if "patch-6" in t.text)
    shown = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(shown) == len(rows)
    for row, line in zip(shown, rows, strict=True):
        assert row.is_displayed()
        cells = [c.strip() for c in line.strip("|").split("|")]
        texts = [td.text.strip() for td in row.find_elements(By.TAG_NAME, "td")]
        assert texts[:2] == cells[:2] and re.sub(r"\s+", " ", " ".join(texts)) == " ".join(cells)
    assert _errors(browser) == []
