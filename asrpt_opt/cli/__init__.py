"""The ``asrpt-opt`` command line."""

from asrpt_opt.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
