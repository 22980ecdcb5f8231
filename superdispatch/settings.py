"""Django settings. Everything operators set comes from common.config, read once."""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from kombu import Queue

from common import config

BASE_DIR = Path(__file__).resolve().parent.parent

SUPERDISPATCH = config.load_or_exit()
DATA_DIR = Path(SUPERDISPATCH.data_dir)
try:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
except OSError:
    print(
        "superdispatch: setting SUPERDISPATCH_DATA_DIR must be a directory it can write",
        file=__import__("sys").stderr,
    )
    raise SystemExit(2)


def _secret_key(data_dir: Path) -> str:
    """The session-signing key, made once and kept beside the store, so no setting is needed."""
    path = data_dir / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key(DATA_DIR)
DEBUG = False
ALLOWED_HOSTS = list(SUPERDISPATCH.allowed_hosts)

INSTALLED_APPS = [
    "access.apps.AuditedAdminConfig",  # Django's admin, its writes in the audit trail
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "axes",
    "superdispatch",
    "records",
    "learning",
    "access",  # named API tokens, the admin's roles and the audit trail: after the apps it
    # gives permissions on
    # The stand-in suite, for `manage.py sandbox` (the demo); nothing in the service imports it.
    "sandbox",
]

MIDDLEWARE = [
    "superdispatch.metrics.CountRequests",  # first: it counts and times every answer
    "superdispatch.metrics.CountRelayAnswers",  # it counts every answer the relay gets
    "django.middleware.security.SecurityMiddleware",
    "common.edge.Edge",  # bodies checked and chunked ones read; no-store and the CSP on answers
    "superdispatch.request_budget.RequestBudget",  # PostgreSQL's statement_timeout, for requests only
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it answers a lockout
]

# The admin sign-in is throttled: five wrong passwords for one username from one address lock
# that pair out for 15 minutes (`python manage.py axes_reset` lifts it). Attempts live in the
# database, shared by every web worker and kept across restarts, and show in the admin.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
# The pair, not the address alone: behind the proxy every sign-in comes from its address, and
# one person's typos must not lock everybody out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True

ROOT_URLCONF = "superdispatch.urls"
APPEND_SLASH = False  # routes answer at exactly their documented path, no redirects

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "superdispatch.wsgi.application"

DATABASES = {"default": dict(SUPERDISPATCH.database)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share one file: wait for the lock, take it up front, use WAL.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    # A kept connection is checked before a request uses it, so one the server dropped (a
    # restart) is opened again rather than failing the request.
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    # Workers keep their connection from task to task, as the web app keeps it from request to
    # request: Celery's Django fixup would otherwise close it after every task, and each relayed
    # card would open one, a new PostgreSQL backend, before its pass. Each task starts and ends
    # as a request does (`close_old_connections`, superdispatch/celery.py), so CONN_MAX_AGE and
    # the health check still hold; the fixup itself closes them every 1,000 tasks.
    CELERY_DB_REUSE_MAX = 1000
    # The few statements a pass runs once a card are prepared once a connection
    # (records/store/prepared.py): only the cursors made there bind on the server, and psycopg
    # prepares nothing a client-binding cursor (all of Django's own) sends.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if SUPERDISPATCH.redis_url:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": SUPERDISPATCH.redis_url,
            "TIMEOUT": 3600,
        }
    }
else:
    # Shared by web, worker and beat on one machine, unlike a per-process memory cache.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
            "TIMEOUT": 3600,
        }
    }

# SUPERDISPATCH_HTTPS=on: served over HTTPS behind a proxy that terminates TLS and says so in
# X-Forwarded-Proto (it must set that header on every request, never pass a client's on).
if SUPERDISPATCH.https:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    # The container's healthcheck and the smoke ask /healthz directly, in plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 365 * 24 * 3600
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Not preloaded: a place on the browsers' preload list is asked for by the owner of the
    # whole registrable domain, for all of it, and is not this service's to ask.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Times on the console's pages: to the second, with the zone (superdispatch/formats).
FORMAT_MODULE_PATH = ["superdispatch.formats"]
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # serve admin and Swagger assets without collectstatic

# Bodies: the API takes small JSON; anything larger is refused (413) before it is read,
# chunked bodies too (common.edge).
DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

REST_FRAMEWORK = {
    # The operator token on every route; /healthz and the relay's webhook opt out on their views.
    # The configured digest is tried first (no read of the store), then a named token, then a
    # staff user signed in to the admin, who browses the same routes (CSRF checked on writes).
    # Each route then checks the scope its method needs (common.scopes), before anything else.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "common.auth.OperatorTokenAuthentication",
        "access.auth.NamedTokenAuthentication",
        "common.auth.StaffSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "common.scopes.ScopeRequired",
    ],
    "UNAUTHENTICATED_USER": None,
    # JSON unless the request asks for `text/html` (a browser): then DRF's browsable API.
    "DEFAULT_RENDERER_CLASSES": ["common.renderers.JSONRenderer", "common.renderers.BrowsableAPI"],
    # JSON, whatever content type it comes with (`curl -d` sends a form's), nested at most
    # common.parsers.MAX_DEPTH deep.
    "DEFAULT_PARSER_CLASSES": ["common.parsers.JSONParser", "common.parsers.AnyTypeJSONParser"],
    "EXCEPTION_HANDLER": "common.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "superdispatch.schema.AutoSchema",
    "URL_FORMAT_OVERRIDE": None,  # `format` is the dataset's own parameter
}

SPECTACULAR_SETTINGS = {
    "TITLE": "SuperDispatch operator API",
    "DESCRIPTION": "Which agent takes the card, and why.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Lint-clean for Redocly and Spectral, servers and tags included (superdispatch.schema).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "superdispatch.schema.finish"],
    # A nullable choice reads as its enum and null (`nullable: true`), with no `NullEnum`.
    "ENUM_ADD_EXPLICIT_BLANK_NULL_CHOICE": False,
    "ENUM_NAME_OVERRIDES": {
        "OutcomeStatus": "records.models.decisions.OUTCOMES",
        "TierName": "records.models.decisions.TIERS",
        "DecisionReason": "records.models.decisions.REASONS",
        "SuggestionKind": "records.models.suggestions.SUGGESTION_KINDS",
        "RunStatus": "records.serializers.RUN_STATUSES",
    },
    "CONTACT": {"name": "SuperDispatch"},
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The operator token's security scheme comes from its authentication class
    # (common.views.OperatorTokenScheme). The schema and the docs are pages for
    # people too: a signed-in staff session of the admin is accepted beside the token.
    "SERVE_AUTHENTICATION": [
        "common.auth.OperatorTokenAuthentication",
        "access.auth.NamedTokenAuthentication",
        "common.auth.StaffSessionAuthentication",
    ],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated", "common.scopes.ScopeRequired"],
}

# Celery: Redis when REDIS_URL is set, else a broker on the local disk so one machine
# needs no server. Task payloads are JSON ids only; task state lives in our tables.
# A worker on the disk broker lists its folder for a message every EMBEDDED_BROKER_POLL_S
# (kombu's default is a second): a relayed card waits for the next look, and an idle worker
# pays for each look, both measured in docs/performance.md (the relay on the embedded default).
EMBEDDED_BROKER_POLL_S = 0.02
if SUPERDISPATCH.redis_url:
    CELERY_BROKER_URL = SUPERDISPATCH.redis_url
    CELERY_BROKER_TRANSPORT = "superdispatch.broker:RedisTransport"  # survives a lost broker
    CELERY_BROKER_TRANSPORT_OPTIONS = {}
else:
    _broker = DATA_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT = "superdispatch.broker:Transport"  # writes messages atomically
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker / "queue"),
        "data_folder_out": str(_broker / "queue"),
        "processed_folder": str(_broker / "processed"),
        "control_folder": str(_broker / "control"),  # else "control/" in the working directory
        "store_processed": False,
        "polling_interval": EMBEDDED_BROKER_POLL_S,
    }
# Two queues, each served by its own workers (Procfile, docker-compose.yml): `placement` takes
# what callers send (the relay's cards, board looks, opt-ins and opt-outs), `celery` beat's
# sweeps, their shards and housekeeping. So a relayed card never waits behind a sweep for a
# worker slot, and no burst of calls queues anything ahead of a sweep. A worker started
# without -Q serves both.
CELERY_TASK_DEFAULT_QUEUE = "celery"
PLACEMENT_QUEUE = "placement"
CELERY_TASK_QUEUES = (Queue(CELERY_TASK_DEFAULT_QUEUE), Queue(PLACEMENT_QUEUE))
CELERY_TASK_ROUTES = {
    "superdispatch.place_card": {"queue": PLACEMENT_QUEUE},
    "superdispatch.look_at_board": {"queue": PLACEMENT_QUEUE},
    "superdispatch.board_changed": {"queue": PLACEMENT_QUEUE},
}
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SOFT_TIME_LIMIT = 120
CELERY_TASK_TIME_LIMIT = 180
# The tasks that lease boards stop before their lease lapses: cut short (soft) at two thirds of
# SUPERDISPATCH_LEASE_SECONDS, their pass then releasing its leases, and ended at the lease.
PASS_TASKS = (
    "superdispatch.sweep",
    "superdispatch.sweep_shard",
    "superdispatch.place_card",
    "superdispatch.look_at_board",
)
CELERY_TASK_ANNOTATIONS = {
    name: {"soft_time_limit": SUPERDISPATCH.lease_seconds * 2 // 3, "time_limit": SUPERDISPATCH.lease_seconds}
    for name in PASS_TASKS
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# SUPERDISPATCH_LOG_FORMAT: text lines as always, or one JSON object a line that also carries
# the `board`, `card`, `decision` and `agent` a loop line names (its `extra` fields).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(levelname)s %(name)s %(message)s",
            "timestamp": "time",
            "rename_fields": {"levelname": "level", "name": "logger"},
        },
    },
    # A refusal anyone can cause is one line, at most one a minute of a kind.
    "filters": {"quiet_refusals": {"()": "superdispatch.refusals.QuietRefusals"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["quiet_refusals"],
            "formatter": "json" if SUPERDISPATCH.log_format == "json" else "plain",
        }
    },
    "loggers": {
        "superdispatch": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django": {"handlers": ["console"], "level": "WARNING"},
    },
}
