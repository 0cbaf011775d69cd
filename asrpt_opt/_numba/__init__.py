"""What every numba kernel of the package shares: :func:`njit`, whose on-disk cache follows
every kernel's source, and the one binary heap (:mod:`asrpt_opt._numba.heaps`).

Numba keys a cached function on its own source file only, so a kernel that inlines helpers
from other modules (the simulator's loop calls each policy's kernel) would keep stale machine
code after a helper changed. :func:`njit` installs, once, a cache locator whose freshness
stamp is a hash of every kernel source of the package: editing any of them recompiles all.

Importing this package imports numba; the modules that use it load when first needed.
"""

from asrpt_opt._numba.cache import njit

__all__ = ["njit"]
