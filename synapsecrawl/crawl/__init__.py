"""One crawl's glue: its configuration, request, scope, addresses, frontier, rendering and logs."""
