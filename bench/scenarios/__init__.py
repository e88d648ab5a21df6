"""One module per scenario of `python -m bench` (see bench/suite.py)."""
