"""fgcpay's benchmarks: `python -m bench --list` (docs/performance.md)."""
