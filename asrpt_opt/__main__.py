"""``python -m asrpt_opt`` runs the command line."""

import sys

from asrpt_opt.cli.main import main

sys.exit(main())
