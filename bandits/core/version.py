"""The version of bbb-bandits (every command's --help ends with it; every run's config.json
records it)."""

__version__ = "0.2.0"

VERSION_LINE = f"bbb-bandits {__version__}"
"""What every command's ``--version`` prints, and the last line of its ``--help``."""
