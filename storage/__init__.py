"""Storage: the database seam (`Database`, opened with `open_database`), its two backends
(SQLite, PostgreSQL), SQL migrations, and one repository module of SQL per resource."""

from ._database import Database, DatabaseUnavailable, Row, StorageError, Tx
from ._open import open_database

__all__ = ["Database", "DatabaseUnavailable", "Row", "StorageError", "Tx", "open_database"]
