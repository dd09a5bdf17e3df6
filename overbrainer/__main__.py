"""Run the command line as ``python -m overbrainer``."""

from overbrainer.cli.main import main

if __name__ == "__main__":
    main()
