"""The front doors: the `synapsecrawl` command, Scrapy's `crawl` override and the demo (may import Scrapy)."""
