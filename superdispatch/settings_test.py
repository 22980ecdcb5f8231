"""Test settings: the real settings module, fed a complete test environment."""

import atexit
import hashlib
import os
import shutil
import tempfile

TEST_OPERATOR_TOKEN = "test-operator-token"
_env = {
    "SUPERPIPELINE_URL": "http://127.0.0.1:9",
    "ORG_PLANE_URL": "http://127.0.0.1:9",
    "ORG_PLANE_SERVICE_CREDENTIAL": "svc_0123456789abcdef0123:test-secret",
    "AGENTPOD_URL": "http://127.0.0.1:9",
    "TREATY_RELAY_DELIVERY_SECRET": "test-relay-secret-0123456789",
    "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": hashlib.sha256(TEST_OPERATOR_TOKEN.encode()).hexdigest(),
}
if "SUPERDISPATCH_DATA_DIR" not in os.environ:
    # A data dir of this run's own: the embedded broker's queue lives there, and a queue
    # shared with another run (or a stray worker) would hand it this run's tasks.
    _env["SUPERDISPATCH_DATA_DIR"] = tempfile.mkdtemp(prefix="superdispatch-test-")
    atexit.register(shutil.rmtree, _env["SUPERDISPATCH_DATA_DIR"], ignore_errors=True)
for _name, _value in _env.items():
    os.environ.setdefault(_name, _value)

from superdispatch.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
CELERY_TASK_ALWAYS_EAGER = False

if not os.environ.get("REDIS_URL"):
    # Each test starts from an empty cache (tests/conftest.py clears it).
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not SQLite's shared in-memory database: there, a worker thread and the live
    # server meet table locks that wait for nobody; a file waits as production's does.
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(os.environ["SUPERDISPATCH_DATA_DIR"], "test.sqlite3")
    }
