"""The documentation site builds with every link resolved (``mkdocs build --strict``).

Skipped where MkDocs is not installed (``pip install -e '.[docs]'`` installs it)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("material")
pytest.importorskip("mkdocstrings_handlers.python")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import site_check  # noqa: E402 (tests/site_check.py: playwright is imported when it runs)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_api_reference_lists_the_library(site: Path) -> None:
    page = (site / "api" / "bayes" / "index.html").read_text(encoding="utf-8")
    for name in ("BayesLinear", "BayesConv2d", "GaussianPrior", "ScaleMixturePrior", "MLP",
                 "FlatMLP", "make_mlp", "kl_weights", "prune_by_snr"):
        assert f'id="bandits.bayes.{name}"' in page, name


def test_experiments_pages_show_their_figures(site: Path) -> None:
    page = (site / "results" / "mushroom" / "paper-horizon" / "index.html").read_text(
        encoding="utf-8")
    assert 'src="regret.png"' in page
    assert (site / "results" / "mushroom" / "paper-horizon" / "regret.png").is_file()
    simulator = (site / "bandit-results" / "index.html").read_text(encoding="utf-8")
    assert 'src="../results/mushroom/paper-horizon/regret.png"' in simulator


def test_the_home_page_shows_the_headline_and_lists_every_page(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'src="results/mushroom/paper-horizon/regret.png"' in home
    assert "Final cumulative regret" in home  # the Figure 6 table, generated
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in ("simulator", "bandit-results", "design-choices", "long-runs", "sweeps",
                 "environments", "datasets", "agents-compared", "mnist", "mnist-2x400",
                 "mnist-2x1200", "regression", "library", "speed", "experiments", "tests",
                 "layout"):
        assert f"{page}.md" in nav and f'href="{page}/"' in home, page
    assert "stylesheets/extra.css" in home  # the site's own styles: wide code scrolls


def test_a_list_goes_on_after_an_indented_table_and_numbers_stay_whole(site: Path) -> None:
    page = (site / "mnist-2x1200" / "index.html").read_text(encoding="utf-8")
    assert "<li>\n<p><strong>Table 2 for the model chosen on validation</strong>" in page
    assert "<li>\n<p><strong>Speed.</strong>" in page
    assert "1.35&nbsp;+-&nbsp;0.06" in page and "<td>1.35 +- 0.06" not in page


def test_every_list_starts_after_a_blank_line() -> None:
    # Python-Markdown reads a list that follows a paragraph line as part of the paragraph
    import re

    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "results").rglob("*.md")]
    glued = []
    for page in pages:
        lines, code = page.read_text(encoding="utf-8").split("\n"), False
        for i, line in enumerate(lines):
            code = code != line.lstrip().startswith("```")
            before = lines[i - 1] if i else ""
            if (not code and re.match(r"(- |\* |\d+\. )", line) and before.strip()
                    and not re.match(r"\s*(- |\* |\d+\. )", before)
                    and not before.startswith((" ", "|", "#", "<!--"))):
                glued.append(f"{page.relative_to(ROOT)}:{i + 1}")
    assert glued == []


def test_pages_fetch_no_web_fonts_and_name_each_module_once(site: Path) -> None:
    for page in ("index.html", "api/bayes/index.html", "layout/index.html"):
        html = (site / page).read_text(encoding="utf-8")
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
    bayes = (site / "api" / "bayes" / "index.html").read_text(encoding="utf-8")
    assert bayes.count('id="bandits.bayes"') == 1


def chromium() -> str:
    """The Chromium for tests/site_check.py; a missing playwright or Chromium skips the
    test, or fails it where BANDITS_REQUIRE_BROWSER=1 (CI sets it: it never passes by
    skipping the browser checks)."""
    browser = os.environ.get("BANDITS_BROWSER") or site_check.system_chromium()
    missing = [name for name, gone in (("playwright", find_spec("playwright") is None),
                                       ("Chromium", browser is None)) if gone]
    if missing:
        why = (f"no {' and no '.join(missing)}: pip install playwright and apt-get install "
               "chromium (or set BANDITS_BROWSER to a Chromium)")
        if os.environ.get("BANDITS_REQUIRE_BROWSER") == "1":
            pytest.fail(why + " (BANDITS_REQUIRE_BROWSER=1 forbids skipping)", pytrace=False)
        pytest.skip(why)
    return browser


@pytest.mark.slow
def test_every_page_renders_in_a_browser_at_desktop_and_phone_width(site: Path) -> None:
    # tests/site_check.py: no console error or failed request, no horizontal overflow of
    # the page outside table scrollers and code blocks, no hidden content without a scroll
    # cue, no table whose cells run together, at 1280 and 390 px
    browser = chromium()
    assert len(site_check.pages(site)) >= 60
    assert site_check.check(site, browser) == []


PLANTED = """<!doctype html><html><head><link rel="icon" href="data:,"><style>
body {{ margin: 0; font: 16px sans-serif; }}
.box {{ overflow-x: auto; max-width: 100%; }} {fade}
td {{ {cell} }}
pre {{ position: relative; }} pre > code {{ display: block; overflow-x: auto; {pad} }}
.md-clipboard {{ position: absolute; top: 0; left: 0; width: 60px; height: 1.5em; }}
</style></head><body><div class="md-content">
<div class="box"><table><tr><td>{wide}</td></tr></table></div>
<table><tr><td>1308 +- 117</td><td>1075 +- 98</td><td>1435 +- 120</td></tr></table>
<ul><li>the command below runs it:{inside}</li></ul>{outside}
<p>and then the list goes on</p>
<pre><button class="md-clipboard"></button><code>{line}</code></pre>
</div></body></html>"""


@pytest.mark.slow
def test_the_browser_check_fails_on_hidden_tables_broken_lists_and_covered_code(
        tmp_path: Path) -> None:
    """A planted page with a wide table without a scroll cue, a table whose cells run
    together (no padding), a list whose code block fell out of it and a copy button over
    text fails the check; the same page mended passes."""
    browser = chromium()
    block, wide, line = "<pre><code>python -m bandits.run</code></pre>", "w" * 400, "x" * 30
    for name, fade, cell, inside, outside, pad in (
            ("planted", "", "padding: 0;", "", block, ""),
            ("mended", ".box { mask-image: linear-gradient(to right, #000 80%, #0002); }",
             "padding: 0.5em 1em;", block, "", "padding-top: 2em;")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.html").write_text(PLANTED.format(
            fade=fade, cell=cell, wide=wide, inside=inside, outside=outside, pad=pad,
            line=line))
    planted = site_check.check(tmp_path / "planted", browser)
    for width in site_check.WIDTHS:
        mine = [p for p in planted if p.startswith(f"/ at {width} px: ")]
        assert any("with no scroll cue" in p for p in mine), planted
        assert any('its cells "1308 +- 117" and "1075 +- 98" run together' in p
                   for p in mine), planted
        assert any("a list broken by the block after it" in p for p in mine), planted
        assert any("the copy button covers the text" in p for p in mine), planted
    assert site_check.check(tmp_path / "mended", browser) == []
