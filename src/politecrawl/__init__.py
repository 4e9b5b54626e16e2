"""politecrawl: a polite, adaptive web crawler."""
