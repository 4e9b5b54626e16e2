"""``python -m politecrawl``: the same as the ``politecrawl`` command."""

import sys

from politecrawl.tools.cli import main

sys.exit(main())
