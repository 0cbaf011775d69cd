"""Experiments on top of the simulator and the solvers: competitive ratios, sweeps, worst-case
search, trace replay, calibration of the speed models, and figures."""
