"""Storage: one interface (`Storage`), two backends (SQLite, PostgreSQL), SQL migrations."""

from ._database import Database, Row, StorageError, Tx
from ._storage import Storage, open_storage

__all__ = ["Database", "Row", "Storage", "StorageError", "Tx", "open_storage"]
