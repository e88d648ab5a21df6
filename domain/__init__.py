"""Pure domain rules of fgcpay: identifiers, money, validation, errors, state machines.

Nothing here performs I/O or reads a clock, so every rule is testable on its own.
"""
