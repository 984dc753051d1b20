"""`python -m treerag_core` entry point."""

import sys

from treerag_core.cli import main

sys.exit(main())
