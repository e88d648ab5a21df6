"""Configuration: `FGCPAY_*` environment variables read once into a frozen `Settings`."""

from __future__ import annotations

import errno
import os
import re
import secrets
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import attrs

PREFIX = "FGCPAY_"
DEFAULT_DATABASE_URL = "sqlite:///var/fgcpay.sqlite3"
LOCAL_SECRET_FILE = Path("var") / "secret_key"


class ConfigError(Exception):
    """The environment does not describe a service that can start."""


@attrs.frozen
class Settings:
    """Everything the service reads from its environment, validated."""

    env: str = "development"
    database_url: str = DEFAULT_DATABASE_URL
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str = "http://127.0.0.1:8000"
    # Whether FGCPAY_PUBLIC_URL was set: if not, behind trusted proxies, the scheme and
    # host they forward are the request's (fgcpay.web.proxies).
    public_url_set: bool = False
    secret_key: str = attrs.field(default="", repr=False)
    eur_cents_per_fgc: Decimal = Decimal(100)
    checkout_ttl_seconds: int = 86400
    rate_limit_per_second: float = 50.0
    rate_limit_burst: int = 100
    webhook_allow_private: bool = False
    webhook_poll_seconds: float = 2.0
    webhook_lease_seconds: float = 60.0
    # The most a receiver check asked of the service may take (under a proxy's request limit).
    webhook_check_seconds: float = 25.0
    expiry_poll_seconds: float = 30.0
    shutdown_grace_seconds: float = 10.0
    actor_idle_seconds: float = 60.0
    actor_ask_timeout_seconds: float = 10.0
    db_pool_size: int = 10
    db_timeout_seconds: float = 5.0
    log_level: str = "INFO"
    # How many proxies in front append to X-Forwarded-For (fgcpay.web.proxies); 0: none.
    trusted_proxy_hops: int = 0
    # Whether anyone may create an account at /dashboard/sign-up (FGCPAY_DASHBOARD_SIGNUP=0: no).
    dashboard_signup: bool = True
    # The bearer token GET /metrics asks for; "" leaves it open (off in production).
    metrics_token: str = attrs.field(default="", repr=False)

    @property
    def production(self) -> bool:
        return self.env == "production"

    @property
    def is_postgres(self) -> bool:
        return self.database_url.startswith(("postgresql://", "postgres://"))

    def with_bind(self, host: str, port: int, explicit_public_url: bool) -> Settings:
        """The same settings bound elsewhere; PUBLIC_URL follows unless it was set."""
        public_url = self.public_url if explicit_public_url else default_public_url(host, port)
        return attrs.evolve(self, host=host, port=port, public_url=public_url)


def database_shown(database_url: str) -> str:
    """The database URL as the operator should see it: without a password and, for
    SQLite, with the file's absolute path (a relative one depends on the directory)."""
    if database_url.startswith("sqlite:///"):
        path = database_url[len("sqlite:///") :]
        return database_url if path == ":memory:" else "sqlite:///" + os.path.abspath(path)
    parts = urlsplit(database_url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = userinfo.partition(":")[0] + at + hostport
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def database_location(database_url: str) -> str:
    """Where the database lives, for an error message: "PostgreSQL at host:port" or
    "the SQLite database /abs/path"."""
    if database_url.startswith("sqlite:///"):
        return "the SQLite database " + database_shown(database_url)[len("sqlite:///") :]
    hostport = urlsplit(database_url).netloc.rpartition("@")[2] or "localhost"
    if not hostport.rpartition("]")[2].count(":"):
        hostport += ":5432"
    return f"PostgreSQL at {hostport}"


def default_public_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(PREFIX + name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{PREFIX}{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigError(f"{PREFIX}{name} must be between {low} and {high}")
    return value


def _float(env: Mapping[str, str], name: str, default: float, low: float) -> float:
    raw = env.get(PREFIX + name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{PREFIX}{name} must be a number, got {raw!r}") from None
    if not value >= low:
        raise ConfigError(f"{PREFIX}{name} must be at least {low}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = env.get(PREFIX + name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{PREFIX}{name} must be 1 or 0, got {raw!r}")


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


# RFC 6750's token68 characters: what an Authorization: Bearer header can carry as it is.
_BEARER_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")


def _metrics_token(env: Mapping[str, str]) -> str:
    token = env.get(PREFIX + "METRICS_TOKEN", "")
    if token and not _BEARER_TOKEN.fullmatch(token):
        # Never echoed: the message names the rule, not the value.
        raise ConfigError(
            f"{PREFIX}METRICS_TOKEN must be 16 to 512 characters of A-Z, a-z, 0-9 and ._~+/=-"
            " (for example: openssl rand -hex 32)"
        )
    return token


# More proxies than any real chain has: a larger value is a mistake, not a setup.
MAX_PROXY_HOPS = 32


def _proxy_hops(env: Mapping[str, str]) -> int:
    raw = env.get(PREFIX + "TRUSTED_PROXY_HOPS", "").strip()
    if raw == "":
        return 0
    if not raw.isascii() or not raw.isdigit() or int(raw) > MAX_PROXY_HOPS:
        raise ConfigError(
            f"{PREFIX}TRUSTED_PROXY_HOPS must be a whole number from 0 to {MAX_PROXY_HOPS}"
            f" (the proxies in front of the service that append to X-Forwarded-For;"
            f" 1 behind a Procfile host's router), got {raw!r}"
        )
    return int(raw)


def _log_level(env: Mapping[str, str]) -> str:
    level = (env.get(PREFIX + "LOG_LEVEL", "") or "INFO").strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"{PREFIX}LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}")
    return level


def load_settings(env: Mapping[str, str] | None = None, *, keep_secret: bool = True) -> Settings:
    """Read the settings from `env` (default: the process environment).

    With nothing set the service runs locally: SQLite under `var/`, PUBLIC_URL from the
    bind address and a secret key generated once and kept in `var/secret_key`. With
    `FGCPAY_ENV=production` an explicit `FGCPAY_SECRET_KEY` is required.

    `keep_secret=False` creates no secret file: a command that must first find its
    database reads the settings so, and without a secret yet its `secret_key` is "" until
    it reads them again.
    """
    env = os.environ if env is None else env
    mode = env.get(PREFIX + "ENV", "development").strip() or "development"
    if mode not in ("development", "production", "test"):
        raise ConfigError(f"{PREFIX}ENV must be development, test or production, got {mode!r}")
    database_url = env.get(PREFIX + "DATABASE_URL", "") or DEFAULT_DATABASE_URL
    if not database_url.startswith(("sqlite://", "postgresql://", "postgres://")):
        raise ConfigError(f"{PREFIX}DATABASE_URL must be a sqlite:// or postgresql:// URL")
    if database_url.startswith("sqlite://") and not database_url.startswith("sqlite:///"):
        raise ConfigError(
            f"{PREFIX}DATABASE_URL: a SQLite URL is sqlite:///relative/path or sqlite:////abs/path"
        )
    host = env.get(PREFIX + "HOST", "") or "127.0.0.1"
    port = _int(env, "PORT", 8000, 0, 65535)
    public_url = (env.get(PREFIX + "PUBLIC_URL", "") or default_public_url(host, port)).rstrip("/")
    if not public_url.startswith(("http://", "https://")):
        raise ConfigError(f"{PREFIX}PUBLIC_URL must be an http(s) URL")
    raw_rate = env.get(PREFIX + "EUR_CENTS_PER_FGC", "") or "100"
    try:
        rate = Decimal(raw_rate)
    except InvalidOperation:
        raise ConfigError(f"{PREFIX}EUR_CENTS_PER_FGC must be a decimal number") from None
    if not rate.is_finite() or rate < 0:
        raise ConfigError(f"{PREFIX}EUR_CENTS_PER_FGC must be a non-negative decimal number")
    secret_key = env.get(PREFIX + "SECRET_KEY", "")
    if not secret_key:
        if mode == "production":
            raise ConfigError(f"{PREFIX}SECRET_KEY must be set when {PREFIX}ENV=production")
        try:
            secret_key = local_secret_key(create=keep_secret)
        except OSError as error:
            raise ConfigError(
                f"cannot keep the development secret in {LOCAL_SECRET_FILE.absolute()}:"
                f" {error.strerror or error} (set {PREFIX}SECRET_KEY,"
                " or run from a writable directory)"
            ) from error
    elif len(secret_key) < 32:
        raise ConfigError(f"{PREFIX}SECRET_KEY must be at least 32 characters")
    # The default points at the bind address, which customers cannot reach in production.
    if mode == "production" and not (env.get(PREFIX + "PUBLIC_URL") or "").startswith("https://"):
        raise ConfigError(
            f"{PREFIX}PUBLIC_URL must be set to the https:// address customers reach"
            f" when {PREFIX}ENV=production"
        )
    return Settings(
        env=mode,
        database_url=database_url,
        host=host,
        port=port,
        public_url=public_url,
        public_url_set=bool(env.get(PREFIX + "PUBLIC_URL", "")),
        secret_key=secret_key,
        eur_cents_per_fgc=rate,
        checkout_ttl_seconds=_int(env, "CHECKOUT_TTL_SECONDS", 86400, 60, 90 * 86400),
        rate_limit_per_second=_float(env, "RATE_LIMIT_PER_SECOND", 50.0, 0.001),
        rate_limit_burst=_int(env, "RATE_LIMIT_BURST", 100, 1, 1_000_000),
        webhook_allow_private=_bool(env, "WEBHOOK_ALLOW_PRIVATE"),
        webhook_poll_seconds=_float(env, "WEBHOOK_POLL_SECONDS", 2.0, 0.05),
        # At least twice an attempt's 10 s deadline, or a slow attempt could be sent twice.
        webhook_lease_seconds=_float(env, "WEBHOOK_LEASE_SECONDS", 60.0, 20.0),
        webhook_check_seconds=_float(env, "WEBHOOK_CHECK_SECONDS", 25.0, 1.0),
        expiry_poll_seconds=_float(env, "EXPIRY_POLL_SECONDS", 30.0, 0.05),
        shutdown_grace_seconds=_float(env, "SHUTDOWN_GRACE_SECONDS", 10.0, 0.0),
        actor_idle_seconds=_float(env, "ACTOR_IDLE_SECONDS", 60.0, 0.001),
        actor_ask_timeout_seconds=_float(env, "ACTOR_ASK_TIMEOUT_SECONDS", 10.0, 0.001),
        db_pool_size=_int(env, "DB_POOL_SIZE", 10, 3, 1000),
        db_timeout_seconds=_float(env, "DB_TIMEOUT_SECONDS", 5.0, 0.1),
        log_level=_log_level(env),
        dashboard_signup=_bool(env, "DASHBOARD_SIGNUP", default=True),
        trusted_proxy_hops=_proxy_hops(env),
        metrics_token=_metrics_token(env),
    )


def local_secret_key(path: Path = LOCAL_SECRET_FILE, *, create: bool = True) -> str:
    """The development secret: generated on first use and kept under var/, readable by
    its owner only (the file 0600, a folder made for it 0700, whatever the umask); ""
    when there is none yet and `create` is False."""
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if existing or not create:
        return existing
    private_folder(path.parent)
    # Written aside, then linked into place: processes that start together (hypercorn's
    # workers) all read the one key linked first, never a file still being written.
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # the umask may have taken the owner's bits too
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(48) + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:
        pass  # another process's key came first: it is the key
    finally:
        os.unlink(draft)
    key = path.read_text().strip()
    if not key:
        raise OSError(errno.EINVAL, "the file is empty", str(path))
    return key


def private_folder(folder: Path) -> None:
    """Make `folder` (and its missing parents) if it is missing; one made here is its
    owner's only (0700, whatever the umask). One that exists is left as the operator made
    it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        return
    os.chmod(folder, 0o700)
