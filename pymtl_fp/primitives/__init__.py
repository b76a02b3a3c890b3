"""Shared synthesizable RTL building blocks (PyMTL3), each in its own file."""
