"""The release store: staged bundles, the active bundle, admissions and invalidated cache
namespaces in one SQLite file, durable across processes and restarts.

Every state change (stage, admit, rollback) is one transaction taken with BEGIN IMMEDIATE, so the
active pointer moves from one complete bundle to the next atomically: a reader sees the six
identities of the old bundle or of the new one, never a mix (seed 003, 0x0C2). The write lock is
taken before anything is read, so two processes admitting at once cannot both decide against the
same stable bundle.

Tables: `bundles` (one row per bundle: id, revision, six identities, staged_at, source JSON),
`admissions` (one row per decision: stable, candidate, result, failing slice, detail JSON, time),
`active` (a single row: the serving bundle), `invalidated` (cache namespaces that must never
serve again) and `meta` (the format).

>>> import hashlib, os, tempfile
>>> from tinyllm.migrate.canary import CanarySlice
>>> from tinyllm.migrate.release_bundle import ReleaseBundle
>>> h = lambda text: hashlib.sha256(text.encode()).hexdigest()
>>> r17 = ReleaseBundle(h("r17-sem"), h("r17-rel"), h("tmpl"), h("r17-data"), h("r17-ckpt"), "cache-r17",
...                     revision="r17")
>>> r18 = ReleaseBundle(h("r18-sem"), h("r18-rel"), h("tmpl"), h("r18-data"), h("r18-ckpt"), "cache-r18",
...                     revision="r18")
>>> tmp = tempfile.TemporaryDirectory()
>>> store = ReleaseStore(os.path.join(tmp.name, "releases.sqlite"), clock=lambda: 0.0)
>>> store.stage(r17, activate_if_empty=True).revision, store.stage(r18).revision
('r17', 'r18')
>>> store.admit("r18", [CanarySlice("old behaviour", 40, 39, 1.04, 1.10)]).result
'rolled_back'
>>> store.active().revision, store.status()["invalidated_namespaces"]
('r17', ['cache-r18'])
>>> store.close(); tmp.cleanup()
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from tinyllm.migrate.canary import CanarySlice
from tinyllm.migrate.release import Admission, admit_candidate
from tinyllm.migrate.release_bundle import IDENTITY_FIELDS, ReleaseBundle

FORMAT = "tinyllm-release-store-v1"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bundles (
    bundle_id TEXT PRIMARY KEY,
    revision TEXT NOT NULL UNIQUE,
    {", ".join(f"{name} TEXT NOT NULL" for name in IDENTITY_FIELDS[:5])},
    cache_namespace TEXT NOT NULL UNIQUE,
    staged_at REAL NOT NULL,
    source TEXT
);
CREATE TABLE IF NOT EXISTS admissions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    stable_id TEXT NOT NULL REFERENCES bundles (bundle_id),
    candidate_id TEXT NOT NULL REFERENCES bundles (bundle_id),
    result TEXT NOT NULL CHECK (result IN ('promoted', 'rolled_back')),
    failing_slice TEXT,
    detail TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS active (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    bundle_id TEXT NOT NULL REFERENCES bundles (bundle_id),
    admission_id INTEGER REFERENCES admissions (id),
    since REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS invalidated (
    namespace TEXT PRIMARY KEY,
    bundle_id TEXT NOT NULL REFERENCES bundles (bundle_id),
    admission_id INTEGER NOT NULL REFERENCES admissions (id),
    at REAL NOT NULL
);
"""


class ReleaseStore:
    """Releases in the SQLite file `path` (created when missing unless `create` is False);
    `clock` gives every recorded time, so tests can fix it."""

    def __init__(self, path: str | os.PathLike, *, create: bool = True, clock: Callable[[], float] = time.time,
                 timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._clock = clock
        if not self.path.is_file():
            if not create:
                raise ValueError(f"release store {str(self.path)!r}: no such file; expected a store made by "
                                 "`tinyllm release stage` (or --store naming one)")
            if not self.path.parent.is_dir():
                raise ValueError(f"release store {str(self.path)!r}: the directory {str(self.path.parent)!r} "
                                 "does not exist")
        self._conn = None
        try:
            # isolation_level=None: this class opens every transaction itself (BEGIN IMMEDIATE).
            self._conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA synchronous = FULL")  # a committed switch survives a power cut
            with self._write() as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if tables and "meta" not in tables:  # someone else's database: add nothing to it
                    raise sqlite3.DatabaseError(f"it holds the tables {', '.join(sorted(tables))} and no meta table")
                if "meta" in tables:
                    found = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
                    if found is None or found[0] != FORMAT:
                        raise sqlite3.DatabaseError(f"format {found and found[0]!r}, expected {FORMAT!r}")
                for statement in filter(str.strip, _SCHEMA.split(";")):  # not executescript: it commits
                    conn.execute(statement)
                conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)", (FORMAT,))
        except sqlite3.DatabaseError as e:
            if self._conn is not None:
                self._conn.close()
            raise ValueError(f"release store {str(self.path)!r}: not a release store ({e})") from None

    # -- plumbing ---------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ReleaseStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: the lock is taken first, committed on success, rolled back on
        any exception, so a state change lands whole or not at all."""
        with self._conn:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:  # "database is locked" after `timeout` seconds
                raise ValueError(f"release store {str(self.path)!r}: {e}; expected the write lock (another "
                                 "process holds it: try again)") from None
            yield self._conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every table seen at the same moment."""
        with self._conn:
            self._conn.execute("BEGIN")
            yield self._conn

    @staticmethod
    def _release(row: sqlite3.Row) -> ReleaseBundle:
        source = None if row["source"] is None else json.loads(row["source"])
        return ReleaseBundle(*(row[name] for name in IDENTITY_FIELDS), revision=row["revision"], source=source)

    def _find(self, conn: sqlite3.Connection, revision_or_id: str, where: str) -> ReleaseBundle:
        if not isinstance(revision_or_id, str):
            raise ValueError(f"{where}: revision: found {type(revision_or_id).__name__}; expected a revision label "
                             "or bundle id")
        row = conn.execute("SELECT * FROM bundles WHERE revision = ? OR bundle_id = ? ORDER BY revision = ? DESC",
                           (revision_or_id, revision_or_id, revision_or_id)).fetchone()
        if row is None:
            staged = [r[0] for r in conn.execute("SELECT revision FROM bundles ORDER BY staged_at, rowid")]
            raise ValueError(f"{where}: revision: no bundle {revision_or_id!r} in {self.path}; expected one of "
                             f"{', '.join(staged) if staged else '(none staged yet)'}")
        return self._release(row)

    def _active(self, conn: sqlite3.Connection) -> Optional[ReleaseBundle]:
        row = conn.execute("SELECT bundles.* FROM active JOIN bundles USING (bundle_id)").fetchone()
        return None if row is None else self._release(row)

    def _invalidated(self, conn: sqlite3.Connection, namespace: str) -> bool:
        return conn.execute("SELECT 1 FROM invalidated WHERE namespace = ?", (namespace,)).fetchone() is not None

    def _set_active(self, conn: sqlite3.Connection, release: ReleaseBundle, admission_id: Optional[int],
                    at: float) -> None:
        if self._invalidated(conn, release.cache_namespace):
            # Its caches were discarded as contaminated; serving it again would refill them.
            raise ValueError(f"cache_namespace: {release.cache_namespace!r} of {release.revision} was invalidated; "
                             "expected a bundle whose namespace is still valid (stage it again under a new one)")
        conn.execute("INSERT INTO active (slot, bundle_id, admission_id, since) VALUES (1, ?, ?, ?) "
                     "ON CONFLICT (slot) DO UPDATE SET bundle_id = excluded.bundle_id, "
                     "admission_id = excluded.admission_id, since = excluded.since",
                     (release.bundle_id, admission_id, at))

    def _record(self, conn: sqlite3.Connection, stable: ReleaseBundle, candidate: ReleaseBundle,
                admission: Admission, detail: Mapping[str, Any], at: float) -> int:
        cursor = conn.execute(
            "INSERT INTO admissions (stable_id, candidate_id, result, failing_slice, detail, at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (stable.bundle_id, candidate.bundle_id, admission.result, admission.failing_slice,
             json.dumps({**detail, **admission.to_json()}, ensure_ascii=False), at))
        admission_id = cursor.lastrowid
        if admission.promoted:
            self._set_active(conn, candidate, admission_id, at)
        else:
            self._set_active(conn, stable, admission_id, at)  # all six stable identities, as one row
            for namespace in admission.invalidated_namespaces:
                conn.execute("INSERT INTO invalidated (namespace, bundle_id, admission_id, at) VALUES (?, ?, ?, ?)",
                             (namespace, candidate.bundle_id, admission_id, at))
        return admission_id

    # -- state changes ----------------------------------------------------------------------

    def stage(self, bundle: ReleaseBundle, *, activate_if_empty: bool = False) -> ReleaseBundle:
        """Record `bundle` (idempotent for the same bundle and label); with `activate_if_empty`,
        make it active when no bundle is. Returns the stored bundle."""
        if not isinstance(bundle, ReleaseBundle):
            raise ValueError(f"stage: bundle: found {type(bundle).__name__}; expected a ReleaseBundle")
        if not bundle.revision:
            raise ValueError("stage: revision: empty; expected a label such as 'r17' (the store finds bundles by it)")
        at = self._clock()
        with self._write() as conn:
            same = conn.execute("SELECT * FROM bundles WHERE bundle_id = ?", (bundle.bundle_id,)).fetchone()
            if same is not None and same["revision"] != bundle.revision:
                raise ValueError(f"stage: revision: bundle {bundle.bundle_id[:12]} is already staged as "
                                 f"{same['revision']!r}; found {bundle.revision!r}, expected the same label")
            if same is None:
                taken = conn.execute("SELECT * FROM bundles WHERE revision = ?", (bundle.revision,)).fetchone()
                if taken is not None:
                    differs = next(n for n in IDENTITY_FIELDS if taken[n] != getattr(bundle, n))
                    raise ValueError(f"stage: revision: {bundle.revision!r} already names other identities ({differs}: "
                                     f"stored {taken[differs][:16]}, found {getattr(bundle, differs)[:16]}); "
                                     "expected a new revision label (a revision is immutable)")
                user = conn.execute("SELECT revision FROM bundles WHERE cache_namespace = ?",
                                    (bundle.cache_namespace,)).fetchone()
                if user is not None:
                    raise ValueError(f"stage: cache_namespace: {bundle.cache_namespace!r} is already used by "
                                     f"{user[0]}; expected a namespace of its own")
                source = None if bundle.source is None else json.dumps(bundle.source, ensure_ascii=False)
                conn.execute(f"INSERT INTO bundles (bundle_id, revision, {', '.join(IDENTITY_FIELDS)}, staged_at, "
                             f"source) VALUES ({', '.join('?' * (len(IDENTITY_FIELDS) + 4))})",
                             (bundle.bundle_id, bundle.revision, *bundle.identities().values(), at, source))
            if activate_if_empty and self._active(conn) is None:
                self._set_active(conn, bundle, None, at)
            return self._find(conn, bundle.bundle_id, "stage")

    def admit(self, revision: str, canary: Sequence[CanarySlice], *, mechanical: Optional[Mapping[str, bool]] = None,
              traffic_basis_points: int = 500) -> Admission:
        """Admit staged `revision` against the active bundle (`admit_candidate`), record the
        decision, and switch the active bundle on promotion or invalidate the candidate's
        namespace on rollback, all in one transaction."""
        with self._write() as conn:
            stable = self._active(conn)
            if stable is None:
                raise ValueError("admit: no active bundle; expected one staged with --activate "
                                 "(activate_if_empty=True) to admit against")
            candidate = self._find(conn, revision, "admit")
            if candidate.bundle_id == stable.bundle_id:
                raise ValueError(f"admit: revision: {candidate.revision!r} is the active bundle; expected a staged "
                                 "candidate")
            if self._invalidated(conn, candidate.cache_namespace):
                raise ValueError(f"admit: candidate.cache_namespace: {candidate.cache_namespace!r} was invalidated by "
                                 f"an earlier rollback; expected {candidate.revision} staged again under a new "
                                 "revision and namespace")
            admission = admit_candidate(stable, candidate, canary, mechanical=mechanical,
                                        traffic_basis_points=traffic_basis_points)
            self._record(conn, stable, candidate, admission, {"kind": "canary"}, self._clock())
            return admission

    def rollback(self, reason: str) -> Admission:
        """Restore the bundle that was active before the promotion of the current one; invalidate
        only the current bundle's namespace; record it as a "rolled_back" admission."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"rollback: reason: found {reason!r}; expected a non-empty text")
        with self._write() as conn:
            current = self._active(conn)
            if current is None:
                raise ValueError("rollback: no active bundle; expected a store with a promoted bundle")
            row = conn.execute("SELECT stable_id FROM admissions WHERE result = 'promoted' AND candidate_id = ? "
                               "ORDER BY id DESC LIMIT 1", (current.bundle_id,)).fetchone()
            if row is None:
                raise ValueError(f"rollback: the active bundle {current.revision} was not made active by a promotion; "
                                 "expected an earlier bundle to restore")
            target = self._find(conn, row[0], "rollback")
            admission = Admission("rolled_back", target, None, (), {}, (), (current.cache_namespace,), 0,
                                  (f"manual rollback: {reason}",))
            self._record(conn, target, current, admission, {"kind": "manual", "reason": reason}, self._clock())
            return admission

    # -- reading ----------------------------------------------------------------------------

    def bundle(self, revision_or_id: str) -> ReleaseBundle:
        """The staged bundle with this revision label (or bundle id), with its source."""
        with self._read() as conn:
            return self._find(conn, revision_or_id, "bundle")

    def active(self) -> Optional[ReleaseBundle]:
        """The bundle serving now (None before the first activation)."""
        with self._read() as conn:
            return self._active(conn)

    def _history(self, conn: sqlite3.Connection) -> list[dict]:
        rows = conn.execute(
            "SELECT admissions.*, s.revision AS stable, c.revision AS candidate FROM admissions "
            "JOIN bundles AS s ON s.bundle_id = stable_id JOIN bundles AS c ON c.bundle_id = candidate_id ORDER BY id")
        return [{"id": r["id"], "at": r["at"], "stable": r["stable"], "candidate": r["candidate"],
                 "stable_id": r["stable_id"], "candidate_id": r["candidate_id"], "result": r["result"],
                 "failing_slice": r["failing_slice"], "detail": json.loads(r["detail"])} for r in rows]

    def history(self) -> list[dict]:
        """Every admission and manual rollback, oldest first."""
        with self._read() as conn:
            return self._history(conn)

    def status(self) -> dict:
        """The active bundle (with `since`), every staged bundle, the admissions (newest last) and
        the invalidated namespaces, read in one transaction."""
        with self._read() as conn:
            active = conn.execute("SELECT bundles.*, active.since FROM active "
                                  "JOIN bundles USING (bundle_id)").fetchone()
            staged = conn.execute("SELECT * FROM bundles ORDER BY staged_at, rowid").fetchall()
            invalidated = conn.execute("SELECT namespace FROM invalidated ORDER BY at, admission_id").fetchall()
            return {
                "store": str(self.path),
                "active": None if active is None else {**self._release(active).to_json(), "since": active["since"]},
                "staged": [{**self._release(r).to_json(), "staged_at": r["staged_at"],
                            "has_source": r["source"] is not None} for r in staged],
                "admissions": self._history(conn),
                "invalidated_namespaces": [r[0] for r in invalidated],
            }
