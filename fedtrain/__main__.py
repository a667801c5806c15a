"""``python -m fedtrain``: the same command line as the ``fedtrain`` console script."""
import sys

from fedtrain.cli import main

if __name__ == "__main__":
    sys.exit(main())
