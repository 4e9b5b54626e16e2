"""What a fetched body says: decoding, parsing, page directives, sitemaps."""
