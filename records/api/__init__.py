"""The operator API: its views, what a request may say, the audit trail's route, and a decision
in words. The record's shape is records.serializers; the writes are the store's actions."""
