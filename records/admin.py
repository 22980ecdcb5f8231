"""Django's admin imports each app's `admin` module to find its pages: the console registers
records' pages when imported (records/console/admin.py)."""

from records.console import admin  # noqa: F401  (registers the model pages)
