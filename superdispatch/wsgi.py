import os

from django.core.wsgi import get_wsgi_application

from superdispatch.store_version import refuse_a_newer_database

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings")
application = get_wsgi_application()
refuse_a_newer_database()  # runserver and gunicorn load the application here
