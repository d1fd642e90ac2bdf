"""Packaged default job configurations (YAML)."""
