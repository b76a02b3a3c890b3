"""``python -m pymtl_fp.cli`` runs the ``pymtl-fp`` command."""

import sys

from pymtl_fp.cli.main import main

sys.exit(main())
