"""Serve plotly's own bundled JavaScript (it ships inside the plotly package) as a static
file, so the dashboard's charts need no CDN and no copy of the file in this repository."""

from __future__ import annotations

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "vendor/plotly.min.js"
_SOURCE = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


class _Storage(FileSystemStorage):
    def path(self, name: str) -> str:
        return str(_SOURCE)


class PlotlyFinder(BaseFinder):
    storage = _Storage(location=str(_SOURCE.parent))

    def check(self, **kwargs):
        return []

    def find(self, path: str, find_all: bool = False, **kwargs):
        if path != PLOTLY_JS:
            return [] if find_all else None
        return [str(_SOURCE)] if find_all else str(_SOURCE)

    def list(self, ignore_patterns):
        yield PLOTLY_JS, self.storage
