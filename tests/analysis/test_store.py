"""The sweep store: typed columns, a schema version, and clear refusals."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from asrpt_opt.analysis.sweep import STORE_SCHEMA, RatioConfig, ResultStore, run_sweep
from asrpt_opt.cli import main
from asrpt_opt.errors import UsageError

CONFIG = RatioConfig(family="single", n=3, policies=("srpt", "fifo"), time_limit_s=5)


def test_results_are_typed_columns_with_a_schema_version(tmp_path):
    path = tmp_path / "s.sqlite"
    store = ResultStore(path)
    payloads = run_sweep(CONFIG, range(2), store=store)
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == STORE_SCHEMA
        rows = db.execute("SELECT seed, offline_status, offline_value_s FROM results").fetchall()
        policy = db.execute(
            "SELECT policy, value_s, proven FROM policy_results ORDER BY key, policy"
        ).fetchall()
    assert sorted(r[0] for r in rows) == [0, 1]
    assert {r[1] for r in rows} == {"optimal"}
    assert sorted(r[2] for r in rows) == sorted(p.offline_value_s for p in payloads)
    assert len(policy) == 4
    assert {p[0] for p in policy} == {"srpt", "fifo"}
    assert all(isinstance(p[1], float) and p[2] == 1 for p in policy)


def test_a_store_of_version_0_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.sqlite"
    payload = {"offline_status": "optimal", "offline_value_s": 9.0, "offline_bound_s": 9.0,
               "offline_wall_s": 0.1, "load": 0.5,
               "policies": {"fifo": {"value_s": 10.0, "ratio": 1.1, "ratio_lo": 1.1,
                                     "ratio_hi": 1.1, "proven": True}}}  # fmt: skip
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE results (key TEXT PRIMARY KEY, family TEXT, n INTEGER,"
            " seed INTEGER, config TEXT, payload TEXT, created REAL)"
        )
        db.execute(
            "INSERT INTO results VALUES ('k', 'single', 3, 0, '{}', ?, 1.0)",
            (json.dumps(payload),),
        )
    ResultStore(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT offline_value_s FROM results").fetchone() == (9.0,)
        assert db.execute("SELECT policy, value_s FROM policy_results").fetchall() == [
            ("fifo", 10.0)
        ]


@pytest.mark.parametrize("kind", ["text", "foreign", "newer", "folder", "no-folder"])
def test_what_is_not_our_store_is_refused_clearly(tmp_path, kind):
    path = tmp_path / "s.sqlite"
    if kind == "text":
        path.write_text("hello, not a database\n" * 100)
        words = "not an asrpt-opt result store"
    elif kind == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE people (name TEXT)")
        words = r"other tables \(people\)"
    elif kind == "newer":
        with sqlite3.connect(path) as db:
            db.execute(f"PRAGMA user_version={STORE_SCHEMA + 1}")
        words = "newer asrpt-opt"
    elif kind == "folder":
        path.mkdir()
        words = "is a folder"
    else:
        path = tmp_path / "missing" / "s.sqlite"
        words = "does not exist"
    with pytest.raises(UsageError, match=words):
        ResultStore(path)


def test_the_cli_refuses_a_foreign_store_in_one_line(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    assert (
        main(["ratio", "--family", "single", "--n", "3", "--seeds", "1", "--store", str(path)])
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "is not an asrpt-opt result store" in err


def test_each_store_refuses_the_other_kind(tmp_path):
    from asrpt_opt.analysis.store import AdversaryStore

    results, searches = tmp_path / "results.sqlite", tmp_path / "searches.sqlite"
    ResultStore(results).close()
    AdversaryStore(searches).close()
    with pytest.raises(UsageError, match="is not an asrpt-opt adversary store"):
        AdversaryStore(results)
    with pytest.raises(UsageError, match="is not an asrpt-opt result store"):
        ResultStore(searches)


def test_an_unversioned_adversary_store_is_adopted_and_a_newer_one_refused(tmp_path):
    from asrpt_opt.analysis.adversary import SearchSpace
    from asrpt_opt.analysis.store import ADVERSARY_SCHEMA, AdversaryStore

    path = tmp_path / "old.sqlite"
    with closing(sqlite3.connect(path)) as db:  # what asrpt-opt wrote before versions
        db.execute(
            "CREATE TABLE evaluations (policy TEXT, space TEXT, key TEXT, ratio REAL,"
            " alg REAL, opt REAL, PRIMARY KEY (policy, space, key))"
        )
        db.execute(
            "CREATE TABLE best (policy TEXT, space TEXT, n INTEGER, ratio REAL, rows TEXT,"
            " PRIMARY KEY (policy, space, n))"
        )
        space = json.dumps([[4, 4], 20.0, 20.0])
        db.execute("INSERT INTO best VALUES ('fifo', ?, 2, 1.5, '[[0, 1, 2, 0]]')", (space,))
        db.commit()
    with AdversaryStore(path) as store:
        assert store.best("fifo", SearchSpace(), 2) == ([(0, 1, 2, 0)], 1.5)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == ADVERSARY_SCHEMA
        db.execute(f"PRAGMA user_version={ADVERSARY_SCHEMA + 1}")
        db.commit()
    with pytest.raises(UsageError, match="written by a newer asrpt-opt"):
        AdversaryStore(path)
