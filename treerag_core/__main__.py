"""`python -m treerag_core` entry point."""

import sys

from treerag_core.cli import main

if __name__ == "__main__":  # not when multiprocessing imports it
    sys.exit(main())
