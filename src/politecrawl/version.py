"""The package's version, in a module of its own: the WARC writer names the software with it,
and importing the package (which imports the crawler) for it would close an import circle."""

__version__ = "0.1.0"
