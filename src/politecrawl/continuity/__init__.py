"""Continuous crawling: fingerprints, duplicate rules, revisits."""
