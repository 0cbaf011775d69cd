"""The parameter half of scikit-learn's estimator contract, without importing scikit-learn.

The oracle predictors are the simulator's default and must not load scikit-learn; this mixin
gives them ``get_params``/``set_params`` (read from ``__init__``'s keyword parameters, as
scikit-learn does), so :func:`sklearn.base.clone` and grid searches work on them all the same.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["ParamsMixin"]


class ParamsMixin:
    """``get_params``, ``set_params`` and a short ``repr`` from ``__init__``'s parameters."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of this predictor.

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn compatibility (there are no nested estimators).

        Returns
        -------
        dict
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> ParamsMixin:
        """Set parameters.

        Parameters
        ----------
        **params
            Names from :meth:`get_params`.

        Returns
        -------
        self
        """
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__} "
                    f"(valid: {', '.join(sorted(valid))})"
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if sig.parameters[name].default is inspect.Parameter.empty
            or sig.parameters[name].default != value
        ]
        return f"{type(self).__name__}({', '.join(changed)})"
