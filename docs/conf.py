"""Sphinx configuration of compatkit's site: ``nox -s docs`` builds it with warnings as
errors (``-W``) and nitpicky references (``-n``), so a link to a page or heading that does not
exist fails the build. External links are not checked (CI reaches no network)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "ext"))

project = "compatkit"
author = "the compatkit authors"
copyright = "the compatkit authors, Apache-2.0"
extensions = ["myst_parser", "ckdocs"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["ext", "_build"]
nitpicky = True

# Markdown: GitHub's heading anchors (links to `page.md#a-heading` are checked), ```{directive}
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

html_theme = "furo"
html_title = "compatkit"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"
html_theme_options = {"navigation_with_keys": True}
