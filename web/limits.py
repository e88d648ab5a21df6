"""The limits of a connection, shared by the server (`fgcpay.server`, which enforces
them while parsing) and the request plumbing (which measures what the parser let by)."""

# A connection that sends no complete request head within this is closed.
KEEP_ALIVE_SECONDS = 5.0
# A body that does not arrive within this is answered 408.
BODY_TIMEOUT_SECONDS = 30.0
# How long a closing connection waits for the client to read its answer.
LINGER_SECONDS = 5.0
# The request line and headers together; larger heads are answered 431.
MAX_HEADER_BYTES = 64 * 1024
