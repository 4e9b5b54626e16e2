"""robots.txt (RFC 9309): rules, matching, the per-origin cache and the gate."""
