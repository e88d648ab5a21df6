"""The customer-facing hosted checkout page: templates, static assets, confirm, live status."""
