"""The demo and its bundled local test web (the only test web in the wheel)."""
