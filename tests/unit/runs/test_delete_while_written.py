"""Deleting a run whose ending job still saves its status (a temporary file renamed into
place) is no error: the run folder is moved aside in one step, then removed, a file that
vanished on the way skipped. A parallel test run hit it: ``shutil.rmtree`` listed
``.status.json.<random>.tmp``, the job renamed it, and the delete failed with
FileNotFoundError."""

from __future__ import annotations

import threading

from sga_core.fileio import atomic_write_json, remove_dir
from sga_core.runs.leftovers import clean_leftovers, leftover_kind


def test_a_folder_written_while_it_is_deleted_goes_without_an_error(tmp_path):
    for attempt in range(30):
        run = tmp_path / f"run-{attempt}"
        (run / "eval").mkdir(parents=True)
        for i in range(300):  # enough entries that the listing and the unlinks take a while
            (run / "eval" / f"f{i}.json").write_text("{}")
        stop = threading.Event()
        started = threading.Event()

        def writer(folder=run, stop=stop, started=started):
            n = 0
            while not stop.is_set():
                try:
                    atomic_write_json(folder / "eval" / "status.json", {"n": n})
                except OSError:
                    pass  # the folder is gone: the write fails, as a late job's would
                n += 1
                started.set()

        t = threading.Thread(target=writer)
        t.start()
        started.wait(10)
        try:
            remove_dir(run)  # never raises for files that come and go
        finally:
            stop.set()
            t.join()
    assert not any(p.name.startswith(".deleting-") for p in tmp_path.iterdir())


def test_a_killed_delete_leaves_a_folder_that_the_cleaner_removes(tmp_path):
    aside = tmp_path / ".deleting-run-a-123"
    (aside / "eval").mkdir(parents=True)
    (aside / "eval" / "x.json").write_text("{}")
    assert leftover_kind(aside.name) == "deleting"
    assert clean_leftovers(tmp_path, grace_s=0, now=aside.stat().st_mtime + 10) == [aside]
    assert not aside.exists()
