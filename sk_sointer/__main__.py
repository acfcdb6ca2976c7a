"""``python -m sk_sointer``: the command line (see :mod:`sk_sointer._cli`)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
