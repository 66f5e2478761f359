"""``python -m gemmlab <command>``: the command line of :mod:`gemmlab.cli` (every study, and the book's commands).

A setting the library cannot take (``GEMMLAB_DEVICE=T5``, ``GEMMLAB_EMULATOR_TIMEOUT=soon``, a GEMMLAB_ name it
does not read) stops the command before any work, in one line that names it and what is legal (GEMMLAB_DEVICE
and GEMMLAB_BACKEND as the package is imported: ``gemmlab/__init__.py``)."""
import sys

from .cli import check_settings, main


def _run() -> int:
    try:
        check_settings()
    except ValueError as exc:
        print(f"python -m gemmlab: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    return main()


if __name__ == "__main__":
    sys.exit(_run())
