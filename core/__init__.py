"""What every layer may import: the clock, settings, structured logs, metrics and
supervision. Nothing here imports anything of fgcpay's but `fgcpay.domain`."""
