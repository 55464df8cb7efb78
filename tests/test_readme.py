import re

from latency_diff import KIT_ROOT, readme


def test_readme_tables_are_the_committed_runs_tables():
    text = (KIT_ROOT / "README.md").read_text()
    blocks = readme.BLOCK.findall(text)
    assert blocks, "the README shows no committed run"
    for _, run, *_ in blocks:
        assert (KIT_ROOT / run / "summary.json").is_file(), f"{run} is not a committed, analyzed run"
    assert readme.update(KIT_ROOT / "README.md", check=True) == []


def test_readme_names_the_two_commands():
    first_screen = "\n".join((KIT_ROOT / "README.md").read_text().splitlines()[:40])
    assert "./scripts/run-all.sh" in first_screen and "./scripts/test.sh" in first_screen
    assert re.search(r"scripts/run-all.sh --help", (KIT_ROOT / "README.md").read_text())
