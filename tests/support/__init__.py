"""What the tests share, in one place: builders of records and facts, the in-process world on
a virtual clock, the real-HTTP stand, and admin page helpers."""
