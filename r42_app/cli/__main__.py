"""`python -m r42_app.cli`: the `r42` command (the package's import installs the quiet signal handlers first)."""

import sys

from r42_app.cli import main

sys.exit(main())
