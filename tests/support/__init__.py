"""Helpers shared by the tests in every folder (tests/conftest.py puts tests/ on sys.path)."""
