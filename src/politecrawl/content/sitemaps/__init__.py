"""Sitemaps: discovery, bounded parsing, results."""
