"""``python -m memstream``: the command line, as ``memstream``."""

from memstream.cli import main

if __name__ == "__main__":
    main()
