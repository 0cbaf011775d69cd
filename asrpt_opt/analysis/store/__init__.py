"""The toolkit's SQLite files, one base for all (:class:`SqliteStore`, module ``base``): the
ratio sweeps' :class:`ResultStore`, the adversary's :class:`AdversaryStore` and the load
sweeps' :class:`LoadSweepStore`.
"""

from asrpt_opt.analysis.store.adversary import ADVERSARY_SCHEMA, AdversaryStore
from asrpt_opt.analysis.store.base import SqliteStore
from asrpt_opt.analysis.store.load import LOAD_SCHEMA, LoadSweepStore
from asrpt_opt.analysis.store.results import STORE_COLUMNS, STORE_SCHEMA, ResultStore

__all__ = [
    "ADVERSARY_SCHEMA",
    "LOAD_SCHEMA",
    "STORE_COLUMNS",
    "STORE_SCHEMA",
    "AdversaryStore",
    "LoadSweepStore",
    "ResultStore",
    "SqliteStore",
]
