"""WARC (ISO 28500): what a crawl fetched, kept in the web archive's format, and read back.

``exchange`` holds one request and its answer as plain values; ``writer`` writes them as
gzipped WARC records, in rotated files, from a thread of its own; ``captures`` reads
WARC and WET files (ours and Common Crawl's) back into captures; ``reread`` turns a
capture into what the knowledge base keeps under a profile's rules.
"""
