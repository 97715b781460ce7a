"""The package's command line:

    python -m anvil shapes MODEL [--tokens 1,16,128] [--no-patch] [-o FILE]
        anvil-tune's shape file for a model's linear layers (anvil/shapes.py)
"""

import sys

from . import shapes

COMMANDS = {"shapes": shapes.main}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    return COMMANDS[argv[0]](argv[1:])


sys.exit(main(sys.argv[1:]))
