"""Storage: one interface (`Storage`), two backends (SQLite, PostgreSQL), SQL migrations."""

from ._database import Database, DatabaseUnavailable, Row, StorageError, Tx
from ._storage import Storage, open_storage

__all__ = [
    "Database", "DatabaseUnavailable", "Row", "Storage", "StorageError", "Tx", "open_storage",
]
