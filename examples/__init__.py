"""Example environments for RODS (importable from the repository root as ``examples.<name>``)."""
