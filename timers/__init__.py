"""Durable timers: what is due lives in the database and is handed to its owners by one
loop (`_sweep.DurableTimer`) that three timers share: the checkout sessions' expiry
(`expiry`), the subscriptions' renewals (`renewals`), and a test clock's advance with the
resumption of advances a dead process left (`test_clock_advances`)."""
