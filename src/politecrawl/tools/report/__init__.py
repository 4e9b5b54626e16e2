"""report.html: data, charts, the page."""
