"""`rcpc fmt` and `rcpc lint` on the command line, and lint findings in `rcpc check`."""

from __future__ import annotations

UGLY = 'X=[1,2]   # two\nvariant( "default" )\n'
PRETTY = 'X = [1, 2]  # two\nvariant("default")\n'


def test_fmt_check_diff_and_write(ws, cli):
    ws.write("recipes/r.rcp", UGLY, dedent=False)
    r = cli("fmt", "--check")
    assert r.code == 1 and r.out == "recipes/r.rcp\n"
    r = cli("fmt", "--diff", "recipes/r.rcp")
    assert r.code == 1 and "-X=[1,2]   # two\n" in r.out and "+X = [1, 2]  # two\n" in r.out
    assert (ws.root / "recipes/r.rcp").read_text() == UGLY
    r = cli("fmt")
    assert r.code == 0 and (ws.root / "recipes/r.rcp").read_text() == PRETTY
    assert cli("fmt", "--check").code == 0


def test_fmt_of_a_file_with_a_syntax_error(ws, cli):
    ws.write("recipes/r.rcp", "X = [1,\n", dedent=False)
    r = cli("fmt", "--check")
    assert r.code == 1 and "recipes/r.rcp:1:" in r.err and "error[E0001]" in r.err
    assert cli("fmt", "nope.rcp").code == 2


def test_lint_exit_code_and_check_reports_lint_findings(ws, cli):
    ws.write("recipes/r.rcp", 'UNUSED = 1\nvariant("default")\n')
    r = cli("lint")
    assert r.code == 1 and "warning[L0001]" in r.err
    r = cli("check")
    assert r.code == 0 and "warning[L0001]" in r.err
    ws.write("recipes/r.rcp", 'UNUSED = 1  # rcpc: ignore[L0001]\nvariant("default")\n')
    assert cli("lint").code == 0
