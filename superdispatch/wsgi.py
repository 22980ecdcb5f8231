import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings")
application = get_wsgi_application()

from superdispatch.store_version import refuse_a_newer_database  # noqa: E402 (needs Django set up)

refuse_a_newer_database()
