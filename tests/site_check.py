"""Every page of the built documentation site in a headless browser, at a desktop and a
phone width: no console error, no request that fails, no horizontal overflow of the page
outside the table scrollers and code blocks (which scroll on their own), no table or code
block hiding content without a scroll cue, no list broken by the block its last item
introduces, no text under a code block's copy button, and no table whose neighbouring cells
run together (their texts touching, or cells without padding).

    mkdocs build --strict -d site && python tests/site_check.py site

Needs ``playwright`` (``pip install playwright``) and a Chromium: playwright's own
(``playwright install chromium``) or the system's (``--browser /usr/bin/chromium``).
Prints one line per problem and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path

WIDTHS = (1280, 390)

# the elements wider than the window that do not scroll inside a scroller of their own
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (e) => {
    for (let p = e; p && p !== document.body; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX;
      if ((x === 'auto' || x === 'scroll' || x === 'hidden') && p.clientWidth <= width)
        return true;
    }
    return false;
  };
  const out = [];
  for (const e of document.querySelectorAll('.md-content *')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1 && !scrolls(e)) {
      const text = (e.textContent || '').trim().slice(0, 40);
      out.push(e.tagName.toLowerCase() + ' "' + text + '" to ' + Math.round(r.right) + ' px');
    }
  }
  const page = document.documentElement.scrollWidth > width + 1;
  return {page: page, scrollWidth: document.documentElement.scrollWidth, elements: out};
}"""


# what a reader cannot see or follow: a box whose content runs past its edge with no cue
# (a fade or other mask, a box-shadow, or shadows drawn by a gradient background), a list
# whose last item introduces a block (ends with ":") that fell out of the list, and text
# under a code block's copy button
HIDDEN = """() => {
  const out = [];
  const name = (e) => e.tagName.toLowerCase() + ' "' +
    (e.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 40) + '"';
  const cue = (e) => {
    const s = getComputedStyle(e);
    return (s.maskImage || s.webkitMaskImage || 'none') !== 'none' || s.boxShadow !== 'none'
      || s.backgroundImage.includes('gradient');
  };
  for (const e of document.querySelectorAll('.md-content *')) {
    const x = getComputedStyle(e).overflowX;
    if ((x === 'auto' || x === 'scroll' || x === 'hidden') && e.clientWidth > 0
        && e.scrollLeft + e.clientWidth < e.scrollWidth - 1 && !cue(e))
      out.push(name(e) + ' hides ' + (e.scrollWidth - e.clientWidth) +
               ' px to its right with no scroll cue');
  }
  const block = (e) => e && (e.matches('pre, table, .highlight, .md-typeset__scrollwrap'));
  for (const list of document.querySelectorAll('.md-content ul, .md-content ol')) {
    const last = list.lastElementChild;
    if (last && (last.textContent || '').trim().endsWith(':')
        && block(list.nextElementSibling))
      out.push('a list broken by the block after it: its last item ' + name(last) +
               ' introduces it, but the block and what follows are outside the list');
  }
  for (const button of document.querySelectorAll('.md-content pre .md-clipboard')) {
    const b = button.getBoundingClientRect();
    const code = button.parentElement.querySelector('code');
    if (!code || b.width === 0) continue;
    const box = code.getBoundingClientRect();
    const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let hidden = null;
    for (let t = walk.nextNode(); t && !hidden; t = walk.nextNode()) {
      if (!t.textContent.trim()) continue;
      range.selectNodeContents(t);
      const rects = [...range.getClientRects()];
      if (rects.length && rects[0].top > b.bottom) break;
      for (const r of rects)
        if (r.right > b.left && r.left < b.right && r.bottom > b.top && r.top < b.bottom
            && r.left < box.right && r.right > box.left) { hidden = t.textContent.trim(); break; }
    }
    if (hidden !== null)
      out.push('the copy button covers the text "' + hidden.slice(0, 30) + '" of ' + name(code));
  }
  return out;
}"""


# a table whose cells run together: in a row, the texts of two neighbouring cells with no
# visible gap between them (under 4 px), or cells without padding at their sides
TOGETHER = """() => {
  const out = [];
  const range = document.createRange();
  const words = (c) => c.textContent.trim().replace(/\\s+/g, ' ');
  const text = (c) => '"' + words(c).slice(0, 30) + '"';
  const box = (c) => { range.selectNodeContents(c); return range.getBoundingClientRect(); };
  for (const table of document.querySelectorAll('.md-content table')) {
    let found = null;
    for (const row of table.rows) {
      const cells = [...row.cells].filter((c) => c.textContent.trim());
      for (let i = 1; i < cells.length && !found; i++) {
        const a = box(cells[i - 1]), b = box(cells[i]);
        if (b.left - a.right < 4 && a.bottom > b.top && b.bottom > a.top)
          found = 'its cells ' + text(cells[i - 1]) + ' and ' + text(cells[i]) +
                  ' run together (' + Math.round(b.left - a.right) + ' px apart)';
      }
      if (found) break;
    }
    const cell = table.querySelector('td, th');
    const s = cell && getComputedStyle(cell);
    if (!found && s && Math.min(parseFloat(s.paddingLeft), parseFloat(s.paddingRight)) < 2)
      found = 'its cells have no padding at their sides';
    const head = table.rows.length ? [...table.rows[0].cells].map(words).join(' | ') : '';
    if (found) out.push('the table "' + head.slice(0, 50) + '": ' + found);
  }
  return out;
}"""


def pages(site: Path) -> list[str]:
    """The site's pages as paths below its root (``layout/``), the 404 page left out."""
    found = []
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        found.append("" if rel == "." else rel + "/")
    return found


def check(site: Path, browser: str | None = None, widths=WIDTHS) -> list[str]:
    """One line per problem of ``site`` (a built site's directory)."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{server.server_address[1]}/"
    problems: list[str] = []
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=browser)
            errors: list[str] = []  # what the page in view reported (cleared per page)
            for width in widths:
                page = chromium.new_page(viewport={"width": width, "height": 900})
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
                for path in pages(site):
                    errors.clear()
                    page.goto(root + path, wait_until="networkidle")
                    where = f"/{path} at {width} px"
                    problems += [f"{where}: console: {e}" for e in errors]
                    found = page.evaluate(OVERFLOW)
                    if found["page"]:
                        problems.append(f"{where}: the page is {found['scrollWidth']} px wide")
                    problems += [f"{where}: {e} overflows" for e in found["elements"][:3]]
                    problems += [f"{where}: {e}" for e in page.evaluate(HIDDEN)]
                    problems += [f"{where}: {e}" for e in page.evaluate(TOGETHER)]
                page.close()
            chromium.close()
    finally:
        server.shutdown()
    return problems


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


def system_chromium() -> str | None:
    """A Chromium on the PATH, if any."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built site's directory")
    parser.add_argument("--browser", help="a Chromium to use (default: playwright's own)")
    args = parser.parse_args(argv)
    problems = check(args.site, args.browser)
    for line in problems:
        print(line)
    n = len(pages(args.site))
    print(f"{n} pages at {' and '.join(f'{w} px' for w in WIDTHS)}: "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
