"""``-j N``: recipes compiled in worker processes give exactly what ``-j 1`` gives (renders,
warnings, errors, exit code), in recipe order; and diagnostics quote their source line
whether the recipe was compiled here, in a worker or served from the build cache."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import examples, output_tree
from rcpc.cli import main
from rcpc.build import parallel, pool
from rcpc.build.parallel import MIN_PARALLEL

RECIPE = '''N = param(int, default = {k})
F = maxtext_flags({{"steps": N, "packing": True}}, {{"packing": {packing}}})
flag_file(name = "trainer", flags = F)
variant("default")
variant("more", set = {{"N": {k} + 1}})
'''
COUNT = MIN_PARALLEL + 2


@pytest.fixture
def wsp(tmp_path, monkeypatch, build_calls):
    """A workspace of COUNT recipes; recipe 2 has a no-op override (W0330). Returns (root,
    calls): ``calls`` counts Compiler.build calls made in this process. The recipes are
    small: the -j policy's size threshold is lifted so that workers are used."""
    monkeypatch.setenv("RCPC_NO_CACHE", "1")
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    root = tmp_path / "ws"
    (root / "recipes").mkdir(parents=True)
    (root / "rcp.toml").write_text("")
    for k in range(COUNT):
        (root / "recipes" / f"r{k}.rcp").write_text(RECIPE.format(k=k, packing="True" if k == 2 else "False"))
    monkeypatch.chdir(root)
    return root, build_calls


def run(capsys, *argv) -> tuple:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def outputs(root, name):
    return output_tree(root / name)


def test_workers_build_what_one_process_builds(wsp, capsys):
    root, calls = wsp
    one = run(capsys, "build", "-j", "1", "-o", "one")
    assert len(calls) == COUNT
    two = run(capsys, "build", "-j", "2", "-o", "two")
    assert len(calls) == COUNT + 1   # the first here (loading the compiler), the rest in workers
    assert one[0] == two[0] == 0
    assert one[2].replace("one", "two") == two[2]
    assert "warning[W0330]" in one[2] and " | F = maxtext_flags(" in one[2]  # quoted line
    assert outputs(root, "one") == outputs(root, "two") and len(outputs(root, "one")) == 2 * COUNT


def test_workers_report_the_same_errors_in_the_same_order(wsp, capsys):
    root, calls = wsp
    (root / "recipes" / "r1.rcp").write_text("X = Y\n" + RECIPE.format(k=1, packing="False"))
    (root / "recipes" / "r4.rcp").write_text(RECIPE.format(k=4, packing="False") + "Z = \n")
    for argv in (["build"], ["check"]):
        one = run(capsys, *argv, "-j", "1")
        two = run(capsys, *argv, "-j", "2")
        assert one == two and one[0] == 1
        assert one[2].index("r1.rcp:1:5: error[E0101]") >= 0 and " | X = Y" in one[2]
    check = run(capsys, "check", "-j", "2")[2]
    assert check.index("r1.rcp") < check.index("r4.rcp")   # every failing recipe, in order
    assert not (root / "rcpc-out").exists()


def test_cached_warnings_quote_their_source_line_too(wsp, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("RCPC_NO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root, calls = wsp
    cold = run(capsys, "build", "-j", "1")
    warm = run(capsys, "build", "-j", "1")
    assert len(calls) == COUNT   # the second build came from the cache
    assert cold[2].replace(f"({COUNT * 2} of", "(0 of") == warm[2]
    assert " | F = maxtext_flags(" in warm[2]


@pytest.mark.parametrize("bad", ["0", "-2", "many", ""])
def test_jobs_must_be_a_positive_number_or_auto(wsp, capsys, bad):
    with pytest.raises(SystemExit) as exc:
        main(["build", "-j", bad])
    assert exc.value.code == 2 and "expected a number of processes" in capsys.readouterr().err


def _warnings(capsys, *argv) -> list[dict]:
    code, _, err = run(capsys, *argv, "--diagnostics", "json")
    assert code == 0
    return json.loads(err)["diagnostics"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_loaded_files_warnings_belong_to_every_recipe_loading_it(wsp, capsys, monkeypatch, tmp_path, jobs):
    """The reported fault: a library's warning was cached only with the first recipe that
    loaded it, so `rcpc build r1` from the cache lost it. Each recipe alone, from the cache,
    must warn as a fresh compile of it alone does."""
    root, calls = wsp
    (root / "recipes" / "lib").mkdir()
    (root / "recipes" / "lib" / "l.rcp").write_text('G = maxtext_flags({"steps": 1}, {"steps": 1})\n')
    for k in range(COUNT):
        recipe = root / "recipes" / f"r{k}.rcp"
        recipe.write_text('load("//recipes/lib/l.rcp", "G")\n' + recipe.read_text())
    alone = {}
    for k in range(COUNT):
        alone[k] = _warnings(capsys, "build", "-j", "1", f"r{k}")
        assert [(d["code"], d["span"]["path"]) for d in alone[k]][0] == ("W0330", "recipes/lib/l.rcp")
    monkeypatch.delenv("RCPC_NO_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    union = []
    for k in range(COUNT):
        union += [d for d in alone[k] if d not in union]
    assert _warnings(capsys, "build", "-j", jobs) == union
    for k in range(COUNT):
        assert _warnings(capsys, "build", "-j", "1", f"r{k}") == alone[k]
    # the last round came from the cache; with workers, the first recipe compiled here
    assert len(calls) == (COUNT * 2 if jobs == "1" else COUNT + 1)


def test_the_jobs_policy_forks_only_for_enough_work(wsp, capsys, monkeypatch):
    """-j N is never slower than -j 1: small work stays in this process (forking and sending
    results back would cost more); workers start only when MIN_PARALLEL recipes holding
    MIN_PARALLEL_BYTES of source are left after the first, which loads the compiler here."""
    root, calls = wsp
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 10 ** 9)
    assert run(capsys, "build", "-j", "2", "-o", "out")[0] == 0
    assert len(calls) == COUNT   # all here
    size = sum(p.stat().st_size for p in sorted((root / "recipes").glob("*.rcp"))[1:])
    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", size)
    calls.clear()
    assert run(capsys, "build", "-j", "2", "-o", "out2")[0] == 0
    assert len(calls) == 1   # the first here, the rest (exactly the threshold) in workers
    assert output_tree(root / "out") == output_tree(root / "out2")
    paths = sorted((root / "recipes").glob("*.rcp"))
    assert not parallel._workers(1, paths) and not parallel._workers(2, paths[:MIN_PARALLEL - 1])


@given(n=st.integers(0, 3000), jobs=st.integers(1, 64))
def test_chunks_shrink_to_single_items_and_cover_every_item(n, jobs):
    """Guided chunks: they add up to the items, never grow, stay within 1..MAX_CHUNK, and
    the last 4 x jobs items (or all when fewer) go one at a time, so that workers finish
    within about one recipe of each other."""
    sizes = pool.chunk_sizes(n, jobs)
    assert sum(sizes) == n
    assert all(1 <= s <= pool.MAX_CHUNK for s in sizes)
    assert sizes == sorted(sizes, reverse=True)
    tail = min(n, 4 * jobs)
    assert sizes[len(sizes) - tail:] == [1] * tail


@pytest.mark.parametrize("n,jobs", [(5, 2), (99, 2), (131, 3)])
def test_results_come_back_in_item_order_whatever_the_chunks(n, jobs):
    items = [f"item-{i}" for i in range(n)]
    assert pool.run(jobs, items, str.upper, (None, {})) == [x.upper() for x in items]


@pytest.mark.parametrize("jobs", [2, 3])
def test_the_files_workers_read_are_noted_as_one_process_notes_them(tmp_path, monkeypatch, jobs):
    """Each worker sends the digests of the files it read first since its previous result
    (not all of them again each time: quadratic at 1,000 recipes); the main process ends up
    knowing every file read, with the digest it had, as with -j 1."""
    from rcpc.api import Workspace
    from rcpc.build.cache import request
    from rcpc.build.parallel import compile_recipes

    monkeypatch.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.delenv("RCPC_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    (root / "recipes" / "lib").mkdir(parents=True)
    (root / "rcp.toml").write_text("")
    for k in range(5):
        (root / "recipes" / "lib" / f"l{k}.rcp").write_text(f"V{k} = {k}\n")
    for k in range(14):  # each loads two libraries, some loaded first by a later recipe
        a, b = k % 5, (k % 5 + 1 + k % 4) % 5
        (root / "recipes" / f"r{k:02}.rcp").write_text(
            f'load("//recipes/lib/l{a}.rcp", "V{a}")\nload("//recipes/lib/l{b}.rcp", "V{b}")\n'
            f'flag_file(name = "t", flags = maxtext_flags({{"steps": V{a} + V{b} + {k}}}))\n')

    def seen(j: int) -> dict:
        ws = Workspace(root)
        cache, options = request(ws.config, None, None)
        cache.enabled = False  # compile every recipe, note what was read
        results = compile_recipes(ws.config, lambda: ws.compiler, cache, options, ws.recipe_paths([]), jobs=j)
        assert not [r for r in results if isinstance(r, Exception)]
        return cache.seen

    one = seen(1)
    assert len(one) == 14 + 5 and seen(jobs) == one


# a worker that ends (killed, crashed) ---------------------------------------------------------
def _named(path):
    return "ok", path.name


# One fork per worker and per killed item: the ci profile draws 20 beside the chosen cases
# below (every worker killed, none, the first and last item, a run of them in one chunk, a
# one-item run); default runs draw 100. No timed assertion on a shared machine.
@settings(deadline=None, max_examples=examples(100, 20))
@given(n=st.integers(1, 24), jobs=st.integers(2, 4), killed=st.sets(st.integers(0, 23)))
@example(n=4, jobs=4, killed={0, 1, 2, 3})
@example(n=24, jobs=2, killed=set())
@example(n=24, jobs=3, killed={0, 23})
@example(n=9, jobs=2, killed={3, 4, 5})
@example(n=1, jobs=2, killed={0})
def test_a_worker_that_ends_loses_only_the_item_it_was_on(n, jobs, killed):
    """Any set of items whose worker is killed (SIGKILL as the out-of-memory killer sends,
    injected with RCPC_TEST_KILL) as it starts them, every worker of the pool included: each
    of those items, and only those, gets ``lost``'s result naming the signal; every other item
    its result; all in order, each passed to ``each`` once, in order; no worker left behind
    (multiprocessing.Pool waited forever for the chunk of a worker that died)."""
    import multiprocessing
    from pathlib import Path

    items = [Path(f"f{i}.rcp") for i in range(n)]
    killed = {items[i] for i in killed if i < n}
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RCPC_TEST_KILL", ",".join(p.name for p in killed))
        got = pool.run(jobs, items, _named, (None, {}), lambda i, out: seen.append((i, out)),
                                   lambda item, status: ("lost", item.name, status))
    assert got == [("lost", p.name, "killed by SIGKILL") if p in killed else ("ok", p.name) for p in items]
    assert seen == list(enumerate(got))
    assert not multiprocessing.active_children()


def _exits(path):
    import os

    if path.name == "f3.rcp":
        os._exit(9)  # a crash: the reported case (the build then waited forever)
    return "ok", path.name


def test_a_worker_that_exits_loses_its_item_with_its_exit_status(monkeypatch):
    from pathlib import Path

    items = [Path(f"f{i}.rcp") for i in range(8)]
    got = pool.run(2, items, _exits, (None, {}), None, lambda item, status: ("lost", status))
    assert got[3] == ("lost", "exit status 9") and [g for g in got if g[0] == "lost"] == [got[3]]


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("no")


class Unloadable(Exception):
    def __init__(self, a, b):  # pickles as Unloadable("ab"): fails to unpickle
        super().__init__(f"{a}{b}")


class Exhausting:
    """A result that runs out of memory as it is pickled (a worker's send under ``ulimit -v``)."""

    def __reduce__(self):
        raise MemoryError


def _fails(item):
    if item == "m":
        raise MemoryError
    if item == "p":
        return Exhausting()
    if item == "e":
        raise Unloadable("a", "b")
    if item == "b":
        raise KeyError("a bug")
    if item == "c":
        raise Unpicklable("c")
    return "ok", item


@pytest.mark.parametrize("item, kind", [("b", KeyError), ("c", RuntimeError), ("e", RuntimeError),
                                        ("m", MemoryError), ("p", MemoryError)])
def test_an_exception_in_a_worker_is_raised_here_with_its_traceback(item, kind):
    """A bug in a worker is not a lost item: the main process raises it (as multiprocessing.Pool
    did), the worker's traceback as its cause; one that cannot be pickled, or unpickled, as
    RuntimeError; memory running out in a worker's work or as it sends its result, as
    MemoryError (the CLI says "out of memory": it was "RuntimeError: a -j worker failed", a
    traceback, under ``ulimit -v``). One item fails: with two (the list held "e" after each), which of their
    workers reports first is a race, and the test failed one run in three for "b"."""
    import multiprocessing

    with pytest.raises(kind) as info:
        pool.run(2, ["a", item, "d", "f"], _fails, (None, {}))
    assert ("__reduce__" if item == "p" else "_fails") in str(info.value.__cause__)  # (p: its send failed)
    assert not multiprocessing.active_children()


def test_a_killed_worker_fails_its_recipe_with_e0952_and_the_build_writes_nothing(wsp, capsys, monkeypatch):
    """Through the CLI: the recipe whose worker was killed is an error (E0952, located at the
    recipe file), the other recipes are still compiled (`check` reports them all), `build`
    exits 1 and writes nothing."""
    monkeypatch.setenv("RCPC_TEST_KILL", "r3.rcp,r4.rcp")
    assert main(["build", "-j", "2"]) == 1
    err = capsys.readouterr().err
    assert "recipes/r3.rcp: error[E0952]" in err and "killed by SIGKILL" in err
    assert not (wsp[0] / "rcpc-out").exists()
    assert main(["check", "-j", "3"]) == 1
    err = capsys.readouterr().err
    assert err.count("error[E0952]") == 2 and "recipes/r4.rcp: error[E0952]" in err


# -j auto: workers only on CPUs no other process is waiting for (issue 41, kind 5) -------------
def _loadavg(tmp_path, monkeypatch, runnable: int, cpus: int) -> None:
    """This machine, as -j auto sees it: ``cpus`` usable, ``runnable`` processes runnable now."""
    f = tmp_path / f"loadavg-{runnable}"
    f.write_text(f"{runnable + 0.5:.2f} 5.50 4.10 {runnable}/424 28782\n")
    monkeypatch.setattr(parallel, "LOADAVG", str(f))
    monkeypatch.setattr(parallel, "default_jobs", lambda: cpus)


@settings(deadline=None)
@example(cpus=2, runnable=6, jobs=parallel.AUTO)   # the loaded machine where auto was 1.19x -j 1
@example(cpus=2, runnable=1, jobs=parallel.AUTO)   # an idle one: both CPUs
@example(cpus=2, runnable=6, jobs=2)               # -j 2 asked for: forks whatever the load
@given(cpus=st.integers(1, 64), runnable=st.integers(1, 100), jobs=st.sampled_from([parallel.AUTO, 1, 2, 3, 8]))
def test_auto_forks_only_onto_idle_cpus(tmp_path_factory, cpus, runnable, jobs):
    """-j auto never forks more workers than CPUs idle now (usable CPUs less the other runnable
    processes), and none unless two are idle: a worker on a busy CPU costs the fork and
    gains nothing. An explicit -j N forks N whatever the load; -j 1 never forks."""
    tmp = tmp_path_factory.mktemp("loadavg")
    with pytest.MonkeyPatch.context() as mp:
        _loadavg(tmp, mp, runnable, cpus)
        mp.setattr(parallel, "MIN_PARALLEL_BYTES", 0)
        got = parallel._workers(jobs, [tmp / f"r{k}.rcp" for k in range(MIN_PARALLEL)])
    idle = max(0, cpus - (runnable - 1))
    if jobs == parallel.AUTO:
        assert got == (idle if idle >= 2 else 0)
    else:
        assert got == (jobs if jobs >= 2 else 0)


def test_idle_cpus_without_a_readable_loadavg_counts_every_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "default_jobs", lambda: 3)
    monkeypatch.setattr(parallel, "LOADAVG", str(tmp_path / "missing"))
    assert parallel.idle_cpus() == 3
    (tmp_path / "bad").write_text("garbage\n")
    monkeypatch.setattr(parallel, "LOADAVG", str(tmp_path / "bad"))
    assert parallel.idle_cpus() == 3


@pytest.mark.parametrize("runnable,in_workers", [(6, False), (1, True)])
def test_build_with_auto_stays_in_process_on_a_busy_machine(wsp, capsys, tmp_path, monkeypatch, runnable,
                                                            in_workers):
    """The default -j auto of a whole build: on 2 CPUs with 5 other processes runnable, every
    recipe compiles here (as with -j 1); on an idle machine, workers take all but the first.
    The outputs are the same."""
    root, calls = wsp
    _loadavg(tmp_path, monkeypatch, runnable, 2)
    assert run(capsys, "build", "-o", "auto")[0] == 0
    assert len(calls) == (1 if in_workers else COUNT)
    assert run(capsys, "build", "-j", "1", "-o", "one")[0] == 0
    assert output_tree(root / "auto") == output_tree(root / "one")
