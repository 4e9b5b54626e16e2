"""The crawl engine: the loop, one turn of a site, the gate, outcomes, processes."""
