"""One crawl's glue: its configuration, request, scope, addresses, URLs, frontier and logs."""
