"""gunicorn's settings when it is started as `gunicorn superdispatch.wsgi` from this directory
(`manage.py serve` sets its own).

The application is loaded in the master before it forks: a bad setting or a database written
by a newer build then stops gunicorn itself (exit 2), rather than each worker in turn while
the master starts another.
"""

preload_app = True
# The worker `manage.py serve` runs: uvicorn's asyncio loop reads each request whole, then one
# of `threads` threads runs the WSGI application, so a slow client holds no thread; its own
# refusals (a request line too long, a malformed request) are in the API's error shape.
worker_class = "superdispatch.gunicorn_worker.Worker"
