"""Procurement Arena: the Django project package and the core domain app."""
