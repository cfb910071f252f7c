"""The library's version, single-sourced for setup.cfg and the stats table."""

__version__ = "0.1.0"
