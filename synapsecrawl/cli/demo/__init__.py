"""The bundled sample site and ``make demo`` (run as ``python -m synapsecrawl.cli.demo``)."""
