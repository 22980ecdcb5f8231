"""A column type of SuperDispatch's own.

Migrations name it `records.models.JSONText` (records/models/__init__.py exports it there)."""

from __future__ import annotations

import json

from django.db import models


class JSONText(models.JSONField):
    """JSON kept as its text, for columns written whole and read whole, never queried inside.

    PostgreSQL takes text as it comes, where `jsonb` parses and rebuilds every value: a
    decision's candidate rows cost the store's CPU much less (docs/performance.md). Reads
    decode it as a JSONField does."""

    def get_internal_type(self) -> str:
        return "TextField"

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)
        return None if value is None else json.dumps(value, cls=self.encoder)
