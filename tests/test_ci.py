"""CI runs the README's commands as written: ``.ci/readme.py`` reads them out of the
README's marked blocks, and a broken README command fails the script CI runs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / ".ci"))
import readme  # noqa: E402

CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_has_the_three_blocks_ci_runs() -> None:
    install, run = readme.commands("quickstart")
    assert install == ("python3 -m venv .venv && . .venv/bin/activate && "
                       "pip install -c constraints.txt -e .")
    assert run == "python -m bandits.run"  # the default job: no flags, no data directory
    tests_install, quick = readme.commands("tests")
    assert "-c constraints.txt" in tests_install and quick.startswith("python -m pytest")
    assert readme.commands("suite") == ["python -m pytest -n 2"]


def test_ci_runs_the_blocks_and_holds_no_copy_of_them() -> None:
    for block in ("readme quickstart", "readme tests --lines 1", "readme suite"):
        assert f'bash -c "$({block})"' in CI, block
    for name in ("quickstart", "tests", "suite"):
        for line in readme.commands(name):
            assert line not in CI, f"{line!r} is copied into .ci/run"


def _readme_with(tmp_path: Path, block: str) -> Path:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = "\n".join(readme.commands("quickstart"))
    assert text.count(commands) == 1
    copy = tmp_path / "README.md"
    copy.write_text(text.replace(commands, block), encoding="utf-8")
    return copy


def _run(copy: Path, *lines: str) -> subprocess.CompletedProcess:
    extra = ["--lines", *lines] if lines else []
    script = subprocess.run([sys.executable, str(ROOT / ".ci" / "readme.py"), "script",
                             "quickstart", "--readme", str(copy), *extra],
                            capture_output=True, text=True, check=True).stdout
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_a_broken_readme_command_fails_the_script_ci_runs(tmp_path) -> None:
    # the same shape as the README's block, each command cheap: the first one works
    good = f"{sys.executable} -m bandits.run --version"
    ok = _run(_readme_with(tmp_path, f"{good}\n{good}"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("bbb-bandits ") == 2 and ok.stdout.count(" s)") == 2
    broken = _run(_readme_with(tmp_path, f"{good}\n{sys.executable} -m bandits.run --stepz 5"))
    assert broken.returncode == 2, broken.stdout
    assert "unrecognized arguments: --stepz" in broken.stderr
    only_first = _run(_readme_with(tmp_path, f"{good}\nfalse"), "1")
    assert only_first.returncode == 0 and only_first.stdout.count(" s)") == 1


@pytest.mark.parametrize("text, problem", [
    ("no marker here\n", "0 blocks marked"),
    ("<!-- ci: quickstart -->\nplain text\n", "must start with ```bash"),
    ("<!-- ci: quickstart -->\n```bash\nls\n", "no closing ```"),
    ("<!-- ci: quickstart -->\n```bash\n\n```\n", "is empty"),
    ("<!-- ci: quickstart -->\n```bash\nls\n```\n<!-- ci: quickstart -->\n```bash\nls\n```\n",
     "2 blocks marked"),
])
def test_a_damaged_block_is_one_line_and_exit_2(tmp_path, text, problem) -> None:
    copy = tmp_path / "README.md"
    copy.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(ROOT / ".ci" / "readme.py"), "script",
                           "quickstart", "--readme", str(copy)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert problem in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_wheel_built_from_the_repository_ships_mushroom_and_runs_outside_the_checkout(
        tmp_path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(ROOT)], check=True, capture_output=True,
                   timeout=300)
    (wheel,) = wheels.glob("bbb_bandits-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("agaricus-lepiota.data.gz", "LICENSE", "README.md"):
        assert f"bandits/datasets/mushroom/{name}" in names, name
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k != "BANDITS_DATA_DIR"}
    env["PYTHONPATH"] = str(target)  # the installed copy, not the checkout
    out = tmp_path / "run"
    code = ("import bandits, sys; assert bandits.__file__.startswith(sys.argv[1]); "
            "from bandits.run import main; sys.exit(main(sys.argv[2:]))")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(target),
         "--agent", "greedy", "--steps", "20", "--seeds", "1", "--no-progress", "--out",
         str(out)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Cumulative regret after 20 steps" in proc.stdout
