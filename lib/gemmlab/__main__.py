"""``python -m gemmlab <command>``: the command line of :mod:`gemmlab.cli` (every study, and the book's commands)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
