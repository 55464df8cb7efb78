import re

from latency_diff import KIT_ROOT
from latency_diff.analysis.export import readme


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


def test_the_options_page_lists_the_drivers_options():
    """Every option of run-all.sh is in docs/options.md's table, and every option there is one of run-all.sh's."""
    from latency_diff import settings
    table = (KIT_ROOT / "docs" / "options.md").read_text()
    documented = set(re.findall(r"`(--[a-z-]+)", table))
    parser = settings.build_parser("")
    actual = {o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
    assert documented == actual, (f"only in docs/options.md: {documented - actual}; "
                                  f"only in --help: {actual - documented}")


def test_every_option_has_its_variable():
    """LATENCY_DIFF_<OPTION> for every option: resolve() reads each through setting(), which names its source."""
    from latency_diff import settings
    parser = settings.build_parser("")
    names = {a.dest for a in parser._actions if a.option_strings and a.dest not in ("help", "list")}
    args = parser.parse_args([])
    resolved = settings.resolve(args)
    assert names <= set(resolved.sources), names - set(resolved.sources)


def test_the_readme_reads_in_five_minutes_and_its_links_resolve():
    text = (KIT_ROOT / "README.md").read_text()
    assert len(text.encode()) <= 8_192, "the README is over 8 KB: move a section to docs/ and link it"
    for target in re.findall(r"\]\(((?:docs|results)/[^)#]+)", text):
        assert (KIT_ROOT / target).exists(), f"README links to {target}, which does not exist"
