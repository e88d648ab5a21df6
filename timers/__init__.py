"""Durable timers: sweeps that read due times from the database and deliver them to the
actors as messages (checkout session expiry; subscription renewals will join)."""
