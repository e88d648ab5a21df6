"""Configuration: `FGCPAY_*` environment variables read once into a frozen `Settings`."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path

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
    secret_key: str = attrs.field(default="", repr=False)
    eur_cents_per_fgc: Decimal = Decimal(100)
    checkout_ttl_seconds: int = 86400
    rate_limit_per_second: float = 50.0
    rate_limit_burst: int = 100
    webhook_allow_private: bool = False
    webhook_poll_seconds: float = 2.0
    webhook_lease_seconds: float = 60.0
    expiry_poll_seconds: float = 30.0
    shutdown_grace_seconds: float = 10.0
    actor_idle_seconds: float = 60.0
    actor_ask_timeout_seconds: float = 10.0
    db_pool_size: int = 10
    log_level: str = "INFO"

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


def _bool(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(PREFIX + name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{PREFIX}{name} must be 1 or 0, got {raw!r}")


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read the settings from `env` (default: the process environment).

    With nothing set the service runs locally: SQLite under `var/`, PUBLIC_URL from the
    bind address and a secret key generated once and kept in `var/secret_key`. With
    `FGCPAY_ENV=production` an explicit `FGCPAY_SECRET_KEY` is required.
    """
    env = os.environ if env is None else env
    mode = env.get(PREFIX + "ENV", "development").strip() or "development"
    if mode not in ("development", "production", "test"):
        raise ConfigError(f"{PREFIX}ENV must be development, test or production, got {mode!r}")
    database_url = env.get(PREFIX + "DATABASE_URL", "") or DEFAULT_DATABASE_URL
    if not database_url.startswith(("sqlite://", "postgresql://", "postgres://")):
        raise ConfigError(f"{PREFIX}DATABASE_URL must be a sqlite:// or postgresql:// URL")
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
        secret_key = local_secret_key()
    elif len(secret_key) < 32:
        raise ConfigError(f"{PREFIX}SECRET_KEY must be at least 32 characters")
    return Settings(
        env=mode,
        database_url=database_url,
        host=host,
        port=port,
        public_url=public_url,
        secret_key=secret_key,
        eur_cents_per_fgc=rate,
        checkout_ttl_seconds=_int(env, "CHECKOUT_TTL_SECONDS", 86400, 60, 90 * 86400),
        rate_limit_per_second=_float(env, "RATE_LIMIT_PER_SECOND", 50.0, 0.001),
        rate_limit_burst=_int(env, "RATE_LIMIT_BURST", 100, 1, 1_000_000),
        webhook_allow_private=_bool(env, "WEBHOOK_ALLOW_PRIVATE"),
        webhook_poll_seconds=_float(env, "WEBHOOK_POLL_SECONDS", 2.0, 0.05),
        # At least twice an attempt's 10 s deadline, or a slow attempt could be sent twice.
        webhook_lease_seconds=_float(env, "WEBHOOK_LEASE_SECONDS", 60.0, 20.0),
        expiry_poll_seconds=_float(env, "EXPIRY_POLL_SECONDS", 30.0, 0.05),
        shutdown_grace_seconds=_float(env, "SHUTDOWN_GRACE_SECONDS", 10.0, 0.0),
        actor_idle_seconds=_float(env, "ACTOR_IDLE_SECONDS", 60.0, 0.001),
        actor_ask_timeout_seconds=_float(env, "ACTOR_ASK_TIMEOUT_SECONDS", 10.0, 0.001),
        db_pool_size=_int(env, "DB_POOL_SIZE", 10, 1, 1000),
        log_level=(env.get(PREFIX + "LOG_LEVEL", "") or "INFO").upper(),
    )


def local_secret_key(path: Path = LOCAL_SECRET_FILE) -> str:
    """The development secret: generated on first use and kept (mode 0600) under var/."""
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    return key
