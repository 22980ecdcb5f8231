"""The admin console: the model pages (registered by `admin`, which Django reaches through
records/admin.py), the dashboard and an agent's story (`pages`), and their charts."""
