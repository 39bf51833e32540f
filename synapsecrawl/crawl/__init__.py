"""One crawl's glue: its configuration, request, scope, addresses, rendering and logs."""
