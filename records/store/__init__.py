"""The store's work beyond its tables (records.models): every write, as a named action
(`actions`), and the reads the loop, the advice and the operator's pages make of it.

Nothing is imported here: the models import `marks`, so importing one module of the store
must not import the rest."""
