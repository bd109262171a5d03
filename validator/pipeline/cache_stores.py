# Strategy: where the results cache keeps its rows (validator.pipeline.cache
# makes the keys and values).  SQLite, the default, runs in WAL mode with a
# busy timeout, so concurrent scans sharing one file wait for each other
# instead of failing; PostgreSQL (a postgresql:// URL, psycopg 3) upserts.
# Each store keeps one row per (path, context): a new identity for a path
# replaces the old row, so the cache does not grow with every rewrite.
# Each put is a transaction of its own, so a killed run keeps what it finished.
from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Final

from validator._errors import StcheckError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["SCHEMA", "CacheError", "Key", "PostgresCache", "ResultCache", "SqliteCache", "open_cache"]

SCHEMA: Final = 1
_BUSY_MS: Final = 60_000
_BATCH: Final = 500
_PG_PREFIXES: Final = ("postgresql://", "postgres://")


class CacheError(StcheckError):
    """The results cache cannot be opened, read or written."""


# -- stores ------------------------------------------------------------------

Key = tuple[str, str]  # (identity, context)


class ResultCache:
    """A results cache: look results up in batches, store them one by one."""

    url: str  # where it is, for messages (a URL without its password)

    def get_many(self, keys: Sequence[Key]) -> dict[Key, str]:
        """The stored JSON of every key that has a row."""
        raise NotImplementedError

    def put(self, key: Key, path: str, value: str) -> None:
        """Store one result in a transaction of its own."""
        raise NotImplementedError

    def count(self) -> int:
        """Rows stored."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection."""
        raise NotImplementedError

    def __enter__(self) -> ResultCache:  # noqa: PYI034 - typing_extensions.Self is not a dependency
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chunks(identities: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(identities), _BATCH):
        yield identities[start : start + _BATCH]


_SQLITE_DDL: Final = (
    "CREATE TABLE IF NOT EXISTS stcheck_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    (
        "CREATE TABLE IF NOT EXISTS stcheck_results ("
        " identity TEXT NOT NULL, context TEXT NOT NULL, path TEXT NOT NULL,"
        " result TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (identity, context))"
    ),
    "CREATE INDEX IF NOT EXISTS stcheck_results_path ON stcheck_results (path, context)",
)


class SqliteCache(ResultCache):
    """The embedded default: one SQLite file, WAL mode, safe to share."""

    def __init__(self, path: str) -> None:
        self.url = path
        try:
            self._db = sqlite3.connect(path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            # WAL with synchronous=NORMAL: a killed process loses nothing it
            # committed; only a power cut may lose the last transactions.
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SQLITE_DDL:
                    self._db.execute(statement)
                self._check_schema()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise CacheError(f"{path}: cannot open the results cache: {exc}") from exc

    def _check_schema(self) -> None:
        row = self._db.execute("SELECT value FROM stcheck_meta WHERE name = 'schema'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO stcheck_meta VALUES ('schema', ?)", (str(SCHEMA),))
        elif row[0] != str(SCHEMA):
            raise CacheError(f"{self.url}: results cache of schema {row[0]}; this stcheck writes schema {SCHEMA}")

    def get_many(self, keys: Sequence[Key]) -> dict[Key, str]:
        found: dict[Key, str] = {}
        wanted = set(keys)
        try:
            for batch in _chunks(sorted({identity for identity, _ in keys})):
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT identity, context, result FROM stcheck_results WHERE identity IN ({marks})",  # noqa: S608 - only placeholders are interpolated
                    batch,
                )
                for identity, context, result in rows:
                    if (identity, context) in wanted:
                        found[identity, context] = result
        except sqlite3.Error as exc:
            raise CacheError(f"{self.url}: cannot read the results cache: {exc}") from exc
        return found

    def put(self, key: Key, path: str, value: str) -> None:
        identity, context = key
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "DELETE FROM stcheck_results WHERE path = ? AND context = ? AND identity <> ?",
                    (path, context, identity),
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO stcheck_results VALUES (?, ?, ?, ?, ?)",
                    (identity, context, path, value, time.time()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise CacheError(f"{self.url}: cannot write the results cache: {exc}") from exc

    def count(self) -> int:
        (n,) = self._db.execute("SELECT count(*) FROM stcheck_results").fetchone()
        return int(n)

    def close(self) -> None:
        self._db.close()


_PG_DDL: Final = (
    (
        "CREATE TABLE IF NOT EXISTS stcheck_results ("
        " identity TEXT NOT NULL, context TEXT NOT NULL, path TEXT NOT NULL,"
        " result TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, PRIMARY KEY (identity, context))"
    ),
    "CREATE INDEX IF NOT EXISTS stcheck_results_path ON stcheck_results (path, context)",
)
# pg_advisory_xact_lock key that serialises table creation between scans
# that start together (CREATE ... IF NOT EXISTS alone can race).
_PG_LOCK: Final = 0x5354_4348_4B00


class PostgresCache(ResultCache):
    """A shared cache in PostgreSQL (psycopg 3), for teams and clusters."""

    def __init__(self, url: str) -> None:
        self.url = _redact(url)  # for messages: never the password
        try:
            import psycopg  # noqa: PLC0415 - an optional dependency, loaded only for a postgresql:// cache
        except ImportError:
            from validator.config.install import install_hint  # noqa: PLC0415 - only on this error path

            raise CacheError(f"a PostgreSQL cache needs psycopg: {install_hint('postgres')}") from None
        self._errors: type[Exception] = psycopg.Error
        try:
            self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK,))
                for statement in _PG_DDL:
                    self._db.execute(statement)
        except psycopg.Error as exc:
            raise CacheError(f"{self.url}: cannot open the results cache: {_first_line(exc)}") from exc

    def get_many(self, keys: Sequence[Key]) -> dict[Key, str]:
        found: dict[Key, str] = {}
        wanted = set(keys)
        try:
            for batch in _chunks(sorted({identity for identity, _ in keys})):
                rows = self._db.execute(
                    "SELECT identity, context, result FROM stcheck_results WHERE identity = ANY(%s)", (list(batch),)
                ).fetchall()
                for identity, context, result in rows:
                    if (identity, context) in wanted:
                        found[identity, context] = result
        except self._errors as exc:
            raise CacheError(f"{self.url}: cannot read the results cache: {_first_line(exc)}") from exc
        return found

    def put(self, key: Key, path: str, value: str) -> None:
        identity, context = key
        try:
            with self._db.transaction():
                self._db.execute(
                    "DELETE FROM stcheck_results WHERE path = %s AND context = %s AND identity <> %s",
                    (path, context, identity),
                )
                self._db.execute(
                    "INSERT INTO stcheck_results VALUES (%s, %s, %s, %s, %s) ON CONFLICT (identity, context)"
                    " DO UPDATE SET path = EXCLUDED.path, result = EXCLUDED.result, created = EXCLUDED.created",
                    (identity, context, path, value, time.time()),
                )
        except self._errors as exc:
            raise CacheError(f"{self.url}: cannot write the results cache: {_first_line(exc)}") from exc

    def count(self) -> int:
        row = self._db.execute("SELECT count(*) FROM stcheck_results").fetchone()
        return 0 if row is None else int(row[0])

    def close(self) -> None:
        self._db.close()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _redact(url: str) -> str:
    """A URL without its password, for messages."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return f"{scheme}{sep}{userinfo.split(':', 1)[0]}:***@{host}"


def open_cache(spec: str) -> ResultCache:
    """A PostgreSQL cache for a postgresql:// URL, else a SQLite file."""
    if spec.startswith(_PG_PREFIXES):
        return PostgresCache(spec)
    if not spec:
        raise CacheError("--cache needs a file name or a postgresql:// URL")
    return SqliteCache(spec)
