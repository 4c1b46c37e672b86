"""Example environment for RODS that is not BFCL's: a lending library (see docs/environments.md)."""

from examples.library.api import LibraryAPI

__all__ = ["LibraryAPI"]
