"""The web plumbing the merchant API, the hosted page and the dashboard share: what every
request goes through (`plumbing`), the ApiError answer (`errors`), API keys (`auth`), the
rate limiter, bodies, responses, trusted proxies, the connection limits, and the
`Service` protocol every handler reaches the running service through. None of the three
web surfaces owns it, and it imports none of them."""
