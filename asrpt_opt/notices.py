"""The NOTICE logging level: what a user should hear about by default but is not a warning
(for example, that numba is compiling kernels and why the first call is slow).

The command line shows NOTICE and above unless ``-q``; library code only logs.
"""

from __future__ import annotations

import logging

__all__ = ["NOTICE"]

#: Between INFO (20) and WARNING (30).
NOTICE = 25
logging.addLevelName(NOTICE, "NOTICE")
