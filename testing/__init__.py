"""Testing tools (test mode): the test helpers' actions on the real flows and the
triggers that make any event type, above the actors and timers they drive and below
the web surfaces and commands that call them."""
