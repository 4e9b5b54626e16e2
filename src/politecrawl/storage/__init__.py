"""Where a crawl's evidence goes: WARC files and JSON-lines logs."""

from politecrawl.storage.logs import JsonlLog, log_time
from politecrawl.storage.warc import WarcWriter

__all__ = ["JsonlLog", "WarcWriter", "log_time"]
