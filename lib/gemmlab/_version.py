"""The library's version (the wheel's, in pyproject.toml), read by the records it writes."""
__version__ = "0.1.0"
