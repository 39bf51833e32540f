"""The web crawl's policy: which discovered URL is worth a fetch, and when (``scrapy crawl web``).

Plain Python, time passed in: ``traps`` (canonical form, session ids, trap shapes), ``budgets`` (pages per
registrable domain, grown by distinct linking domains), ``frontier`` (per-site pending URLs in priority
order), ``seen`` (the set of known URLs in bounded memory), ``neardup`` (SimHash), ``revisit`` (the interval
to the next fetch of a page).
"""
