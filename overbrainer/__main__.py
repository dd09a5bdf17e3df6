"""`python -m overbrainer`: the same entry as the console script."""

from overbrainer.cli.entry import main

if __name__ == "__main__":
    main()
