"""URLs: canonical form and keys, filters, traps, the seen-set, variants."""
