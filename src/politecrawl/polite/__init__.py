"""Politeness: the delay arithmetic and the never-crawl list."""
