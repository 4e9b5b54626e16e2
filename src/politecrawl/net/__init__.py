"""The network boundary: one HTTP request, name lookups, content codings."""
