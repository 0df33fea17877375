"""MkDocs hook: the experiments' write-ups join the site from where they lie in results/.

Nothing is copied into docs/. Every README.md under results/ (one per shipped
experiment), and every file under results/ that a page of the site links to (pages,
figures, data files), are added to the site at their path in the repository,
``results/...``. Files are followed from link to link, so only what is linked comes
in (results/ holds many per-model files that no page needs).

Links are written as paths in the repository, relative to the file that holds them,
so that they also work where the Markdown files are read in place: a page in docs/
links ``../results/mushroom/README.md``, and a results README links
``../../docs/simulator.md``. This hook maps them to the site's paths (docs/ is the
site's root, results/ sits beside its pages). A link to a directory goes to its
README.md; a directory without one gets a short generated page listing what it holds.
Every results README must be in the nav of mkdocs.yml: one that is not is a warning
(an error under ``mkdocs build --strict``).
"""

from __future__ import annotations

import logging
import posixpath
import re
import subprocess
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.results")

RESULTS = "results"

# Markdown links and images: ](target) or ](target "title").
_MD_LINK = re.compile(r"\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# HTML src= and href= (followed to find files, not rewritten).
_HTML_LINK = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""")


class _Site:
    """What on_files learnt, for the later events."""

    root = Path()
    docs = "docs"  # docs_dir, from the repository root
    dir_pages: dict[str, str] = {}  # directory under results/ -> the page that stands for it
    readmes: set[str] = set()  # every README.md under results/


def _repo_files(root: Path) -> set[str]:
    """The files under results/ that the repository holds (tracked, or new and not
    ignored), as paths from the root; every file there when git is not available."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", RESULTS],
            cwd=root, capture_output=True, check=True).stdout.decode()
        names = {n for n in out.split("\0") if n}
    except (OSError, subprocess.CalledProcessError):
        names = {p.relative_to(root).as_posix()
                 for p in (root / RESULTS).rglob("*") if p.is_file()}
    return {n for n in names if (root / n).is_file()}  # deleted but not yet committed: gone


def _in_results(path: str) -> bool:
    return path == RESULTS or path.startswith(RESULTS + "/")


def _site_path(src_uri: str, target: str) -> str | None:
    """The path in the site of what a relative link in page ``src_uri`` names: read as a
    path in the repository (relative to the page's file), else as a path in the site."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path or parts.path.startswith("/"):
        return None
    path = unquote(parts.path)
    here = src_uri if _in_results(src_uri) else f"{_Site.docs}/{src_uri}"  # file in the repo
    in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
    if (_Site.root / in_repo).exists():
        if in_repo.startswith(_Site.docs + "/"):
            return in_repo[len(_Site.docs) + 1:]
        if _in_results(in_repo):
            return in_repo
    in_site = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), path))
    if _in_results(in_site) and (_Site.root / in_site).exists():
        return in_site
    return None


def _listing(directory: str, repo: set[str]) -> str:
    """A page for a linked directory without a README: what it holds, one level deep."""
    prefix = directory + "/"
    files: list[str] = []
    subdirs: dict[str, int] = {}
    for name in sorted(n for n in repo if n.startswith(prefix)):
        rest = name[len(prefix):]
        if "/" in rest:
            sub = rest.split("/", 1)[0]
            subdirs[sub] = subdirs.get(sub, 0) + 1
        else:
            files.append(rest)
    lines = [f"# `{directory}/`", "",
             "An experiment's directory in the repository, without a README of its own. "
             "It holds:", ""]
    lines += [f"- [`{f}`]({f})" for f in files]
    lines += [f"- `{s}/` ({n} file{'s' if n != 1 else ''})" for s, n in subdirs.items()]
    return "\n".join(lines) + "\n"


def on_files(files: Files, config) -> Files:
    root = Path(config.config_file_path).resolve().parent
    _Site.root = root
    _Site.docs = Path(config.docs_dir).resolve().relative_to(root).as_posix()
    _Site.dir_pages = {}
    _Site.readmes = set()
    repo = _repo_files(root)
    dirs: set[str] = set()
    for name in repo:
        d = posixpath.dirname(name)
        while d and d not in dirs:
            dirs.add(d)
            d = posixpath.dirname(d)

    added: dict[str, str | None] = {}  # path -> None (a file of the repository) or page text
    queue: deque[tuple[str, str]] = deque()  # (src_uri, markdown) of pages to follow links in

    def add(path: str) -> None:
        if path in added or files.get_file_from_path(path) is not None:
            return
        if path in repo:
            added[path] = None
            if path.endswith(".md"):
                queue.append((path, (root / path).read_text(encoding="utf-8")))
        elif path in dirs:
            readme = f"{path}/README.md"
            if readme in repo:
                _Site.dir_pages[path] = readme
                add(readme)
            else:
                page = f"{path}/index.md"
                _Site.dir_pages[path] = page
                added[page] = text = _listing(path, repo)
                queue.append((page, text))

    for f in files.documentation_pages():
        queue.append((f.src_uri, f.content_string))
    for name in sorted(repo):
        if posixpath.basename(name) == "README.md":
            _Site.readmes.add(name)
            add(name)
    while queue:
        src_uri, text = queue.popleft()
        for target in _MD_LINK.findall(text) + _HTML_LINK.findall(text):
            path = _site_path(src_uri, target)
            if path is not None and _in_results(path):
                add(path)

    for path, text in sorted(added.items()):
        if text is None:
            files.append(File(path, str(root), config.site_dir, config.use_directory_urls))
        else:
            files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Turn every link into a path in the site, relative to the page."""
    src_uri = page.file.src_uri

    def repoint(match: re.Match) -> str:
        target = match.group(1)
        path = _site_path(src_uri, target)
        if path is None:
            return match.group(0)
        path = _Site.dir_pages.get(path, path)
        new = posixpath.relpath(path, posixpath.dirname(src_uri) or ".")
        anchor = urlsplit(target).fragment
        new += f"#{anchor}" if anchor else ""
        return match.group(0).replace(target, new, 1)

    return _MD_LINK.sub(repoint, markdown)


def on_nav(nav, config, files):
    in_nav = {page.file.src_uri for page in nav.pages}
    for readme in sorted(_Site.readmes - in_nav):
        log.warning("%s is an experiment's page but not in the nav of mkdocs.yml", readme)
    return nav


# The docstrings cross-reference in Sphinx's roles (:class:`X`, :func:`f`); the Markdown
# of the API pages shows the role's name before the code, which this drops.
_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):(?=<code>)")


# In a table cell, "1.42 +- 0.14" (bold or not) is one number: non-breaking spaces keep
# it on one line, while the cell's words still wrap (a narrow column never splits a
# number across two lines).
_CELL = re.compile(r"<td\b[^>]*>.*?</td>", re.S)
_PLUS_MINUS = re.compile(r"([\d%]|</strong>) \+- (?=[\d<])")


def _keep_numbers_whole(html: str) -> str:
    return _CELL.sub(lambda m: _PLUS_MINUS.sub(r"\1&nbsp;+-&nbsp;", m.group(0)), html)


def on_page_content(html: str, page, config, files) -> str:
    return _keep_numbers_whole(_ROLE.sub("", html))
