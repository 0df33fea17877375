"""The ways a result file is tampered with by hand, for the adversarial cases
(:mod:`adversarial_cases`): each a function of the file's path and one argument, changing
that file in one way only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(lines))


def _cells(line: str) -> list[str]:
    return line.rstrip("\n").split(",")


def cell(path: Path, spec: tuple[str, str]) -> None:
    """The cell of column ``spec[0]`` on the file's fourth line set to ``spec[1]``."""
    column, value = spec
    lines = _lines(path)
    at = _cells(lines[0]).index(column)
    cells = _cells(lines[3])
    cells[at] = value
    lines[3] = ",".join(cells) + "\n"
    _write(path, lines)


def drop_column(path: Path, column: str) -> None:
    lines = _lines(path)
    at = _cells(lines[0]).index(column)
    _write(path, [",".join(c for k, c in enumerate(_cells(line)) if k != at) + "\n"
                  for line in lines])


def rename_column(path: Path, column: str) -> None:
    lines = _lines(path)
    lines[0] = ",".join(f"{c}_x" if c == column else c for c in _cells(lines[0])) + "\n"
    _write(path, lines)


def add_column(path: Path, column: str) -> None:
    lines = _lines(path)
    _write(path, [line.rstrip("\n") + ("," + column if k == 0 else ",1") + "\n"
                  for k, line in enumerate(lines)])


def duplicate_row(path: Path, _=None) -> None:
    lines = _lines(path)
    _write(path, [*lines[:4], lines[3], *lines[4:]])


def remove_row(path: Path, _=None) -> None:
    lines = _lines(path)
    del lines[3]
    _write(path, lines)


def remove_last_row(path: Path, _=None) -> None:
    _write(path, _lines(path)[:-1])


def swap_rows(path: Path, _=None) -> None:
    lines = _lines(path)
    lines[2], lines[3] = lines[3], lines[2]
    _write(path, lines)


def _every_row(path: Path, column: str, change) -> None:
    lines = _lines(path)
    at = _cells(lines[0]).index(column)
    out = [lines[0]]
    for line in lines[1:]:
        cells = _cells(line)
        cells[at] = change(cells[at])
        out.append(",".join(cells) + "\n")
    _write(path, out)


def renumber_seeds(path: Path, _=None) -> None:
    _every_row(path, "seed", lambda s: str(int(s) + 100))


def rename_agent(path: Path, agent: str) -> None:
    _every_row(path, "agent", lambda a: "nosuchagent" if a == agent else a)


def header_only(path: Path, _=None) -> None:
    _write(path, _lines(path)[:1])


def truncate(path: Path, _=None) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def empty(path: Path, _=None) -> None:
    path.write_bytes(b"")


def garbage(path: Path, _=None) -> None:
    path.write_bytes(bytes(range(256)) * 16)


def missing(path: Path, _=None) -> None:
    path.unlink()


def directory(path: Path, _=None) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside.txt").write_text("a folder where a file was")


def semicolons(path: Path, _=None) -> None:
    path.write_text(path.read_text().replace(",", ";"))


def crlf(path: Path, _=None) -> None:
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def text(path: Path, body: str) -> None:
    path.write_text(body)


def json_set(path: Path, spec: tuple[str, object]) -> None:
    """The record's key ``spec[0]`` set to ``spec[1]`` (removed where it is ``...``)."""
    key, value = spec
    record = json.loads(path.read_text())
    if value is ...:
        del record[key]
    else:
        record[key] = value
    path.write_text(json.dumps(record, indent=2) + "\n")


def jsonl(path: Path, spec: tuple[str, object]) -> None:
    """The first record of a JSON-lines file changed: ``spec`` is (dotted key, value; ``...``
    removes it), or ("line", text) for the first line replaced by ``text``, or ("repeat",)."""
    lines = _lines(path)
    if spec[0] == "line":
        lines[0] = spec[1]
    else:
        record = json.loads(lines[0])
        *parents, last = spec[0].split(".")
        at = record
        for p in parents:
            at = at[p]
        if spec[1] is ...:
            del at[last]
        else:
            at[last] = spec[1]
        lines[0] = json.dumps(record) + "\n"
    _write(path, lines)


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
