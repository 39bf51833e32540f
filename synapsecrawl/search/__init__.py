"""Serving the knowledge base: the search service and its HTTP/MCP front."""
