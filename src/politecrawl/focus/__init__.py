"""The adaptive crawl: nugget functions, the learned prioritiser, the strategy."""
