"""The demo inventory service's package."""
