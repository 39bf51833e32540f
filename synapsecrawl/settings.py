"""Scrapy settings of synapsecrawl: constants only; the profile add-on derives the rest.

The defaults of our own settings are here, once: synapsecrawl.crawl.config reads every one of
them (under what the operator set), and the components read that config.
"""

BOT_NAME = "synapsecrawl"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"
COMMANDS_MODULE = "synapsecrawl.cli.commands"

BOT_PROFILE = "synapsebot"
KB_URI = ""  # empty: sqlite:///.synapsecrawl/kb.sqlite3 in the working directory
KB_BATCH_PAGES = 8  # pages in one KB transaction at most; larger batches completed in bursts that held the loop
KB_BATCH_SECONDS = 0.25  # how long a batch waits for more pages after its first
KB_OUTAGE_SECONDS = 300  # a KB unavailable longer than this ends the crawl (exit 75), what it holds journalled
KB_BUFFER_PAGES = 256  # pages held in memory while the KB is unavailable; past them, in the journal
KB_JOURNAL_DIR = ""  # empty: .synapsecrawl/journal in the working directory
METRICS_PORT = 0  # a port for Prometheus to scrape the crawl's figures from; 0: none
METRICS_HOST = "127.0.0.1"
HOST_RESOLVE = ""
ALLOW_PRIVATE_ADDRESSES = False
SIGNING_KEY = ""
SIGNATURE_AGENT = ""
SIGNATURE_AGENT_FORM = "origin"  # or "directory" (webbotauth httpsig-protocol-01: the key set URL)
SIGNING_EXPIRES = 300  # seconds a request signature stays valid (at most 3600)
SIGNING_NONCE_ENABLED = True

ADDONS = {"middlewares.engine.addon.ProfileAddon": 0}

# Safety: no remote control, no telnet console, no cookies, no AutoThrottle
# (it rewrites per-site delays back to the global floor).
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
COOKIES_ENABLED = False
AUTOTHROTTLE_ENABLED = False
ROBOTSTXT_OBEY = False  # replaced by middlewares.robots (RFC 9309, per-profile outcomes)
METAREFRESH_ENABLED = False
HTTPCACHE_ENABLED = False
# 429 and 503 are the backoff's to judge; an immediate retry ignores Retry-After.
RETRY_HTTP_CODES = [500, 502, 504, 522, 524, 408]
RETRY_TIMES = 2
# A page whose retries are spent is one WARNING line from its spider's errback (spiders.base.page_failed),
# naming the URL and the reason in words; Scrapy's own give-up line would be a second, at ERROR.
RETRY_GIVE_UP_LOG_LEVEL = "DEBUG"
REREAD_DAYS = None  # days between re-reads of a source, above 0; unset = the profile's (synapsebot: 7)
REMOVAL_LIST = ""  # a file of domains and URL prefixes deleted from the KB and never fetched
BACKOFF_MAX_WAIT = 0  # seconds a crawl may wait on one paused site; 0 = the profile's [backoff] max_wait
ONDEMAND_HOST = "127.0.0.1"  # `scrapy crawl ondemand` listens here only (SNA-ONDEMAND)
ONDEMAND_PORT = 8765  # POST /api/web_fetch and MCP at /mcp; 0 = any free port
ONDEMAND_WAIT = 120  # seconds an on-demand ask waits for its page (pacing included) before a timeout error
PACING_REDIS_URL = ""  # empty: each process paces itself
# ALL-NOJS: no JavaScript unless the operator opts in with JS_RENDERING; the JS_* defaults are
# synapsecrawl.crawl.render.RenderConfig's.

# Requests wait for their site in the queue (below), so this bounds only
# downloads and answers in progress, and smaller batches of answers keep the
# event loop's lag, which stretches the next gaps, short (docs/benchmarks.md).
CONCURRENT_REQUESTS = 64
# Pages are read (trafilatura, pypdf) in worker processes, so a batch of
# answers never holds up the event loop that sends the next requests on time.
# "auto": one per core (on 2 cores one worker was the bound); 0 reads in this process.
EXTRACT_PROCESSES = "auto"
# Scrapy starts CONCURRENT_ITEMS tasks for every response's output (default
# 100, each costing event-loop time for a page's one item); our spiders yield one
# item a page, a feed some dozens, all written through one KB connection.
CONCURRENT_ITEMS = 16
DOWNLOADER = "middlewares.engine.downloader.PacedDownloader"
# The queue hands out a request only when its site is due: waiting is done
# there, not in the downloader, where it would hold a global slot.
SCHEDULER_PRIORITY_QUEUE = "middlewares.engine.scheduler.PacedPriorityQueue"
TWISTED_DNS_RESOLVER = "middlewares.engine.resolver.GuardedResolver"

DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "middlewares.netguard.NetGuardMiddleware": 50,  # refuse schemes and addresses before anything else
    "middlewares.removals.RemovalListMiddleware": 60,  # before backoff and robots.txt: a listed site is never touched
    "middlewares.backoff.BackoffGateMiddleware": 90,  # before robots.txt: a paused site is not touched at all
    "middlewares.robots.RobotsMiddleware": 100,  # replaces Scrapy's (None): judge first
    "middlewares.budget.PageBudgetMiddleware": 120,  # a page counts once robots.txt lets it through
    # after robots.txt (it sets the pace): a request not due yet goes back to the queue
    "middlewares.pacing.PacingGateMiddleware": 130,
    "middlewares.tdmrep.TdmRepMiddleware": 130,  # OMN-FETCH: a site we really fetch from gets tdmrep.json read first
    # JS_RENDERING only: renders what the gates (560) and Retry (550) let through, the page's slot free again
    "middlewares.render.RenderMiddleware": 540,
    "middlewares.sizelimit.ResponseGateMiddleware": 560,  # under compression (590): sees decoded bytes
    # Between the type gate (560) and compression (590): sees the final answer after redirects (600) before the
    # gate could drop it, so a 404 of any type removes; adds validators after robots.txt let a request through.
    "middlewares.reread.RereadMiddleware": 570,
    # replaces Scrapy's (None), same place: a body that does not decode is one line, not a traceback
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "middlewares.sizelimit.ContentDecodingMiddleware": 590,
    "middlewares.sizelimit.DecompressionGuardMiddleware": 595,  # just over compression: bounds its output
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "middlewares.redirects.ScopedRedirectMiddleware": 600,  # replaces Scrapy's (None), same place: judges each hop
    # Above redirects (600): sees a 3xx's Retry-After; above ResponseGate (560) and Retry (550): sees
    # every 429/503 (even of a refused type) first, and owns SereneReader's timeouts and 5xx. Backoff
    # judges at download time and saves the site's state on the way back (655); its retries and holds run
    # where they ran before the split (650), just after, with nothing between them.
    "middlewares.backoff.BackoffMiddleware": 655,
    "middlewares.retry.BackoffRetryMiddleware": 650,
    # last: signs what goes on the wire (after 900, HttpCache), as it leaves (PacedDownloader calls process_send)
    "middlewares.signing.SigningMiddleware": 950,
}
SPIDER_MIDDLEWARES = {
    "middlewares.labels.LabelsMiddleware": 950,  # OMN-LABELS: nearest the spider, labels items as they leave it
}
ITEM_PIPELINES = {
    "pipelines.index.IndexPipeline": 300,
}
EXTENSIONS = {
    "middlewares.engine.kbhold.KbHoldExtension": 480,  # holds the crawl while its KB cannot take pages
    # before the summary (500), which closes the KB on spider_closed: the source is recorded first
    "middlewares.engine.sources.SourceExtension": 490,
    "middlewares.engine.summary.SummaryExtension": 500,
    "middlewares.engine.requestlog.RequestLogExtension": 510,  # the request log and crawl report
    "middlewares.engine.warc.WarcExtension": 520,  # WARC_DIR only: what went on the wire, as WARC
    "middlewares.engine.metrics.MetricsExtension": 530,  # METRICS_PORT: the crawl's figures for Prometheus
}
REPORT_ENABLED = True  # write REPORT_DIR/CRAWL_ID/ (requests.jsonl, stats.json, index.html, report.json)
REPORT_DIR = ""  # empty: reports/ beside a SQLite KB, else .synapsecrawl/reports
WARC_DIR = ""  # empty: no WARC; else every request and answer as gzipped WARC files there (middlewares.engine.warc)
WARC_MAX_SIZE = 1_000_000_000  # bytes a WARC file reaches before the next one starts

LOG_LEVEL = "INFO"
LOG_FORMATTER = "middlewares.engine.logformat.PageLogFormatter"  # a page in a log line is its URL, never its text
FEED_EXPORT_ENCODING = "utf-8"

# Breadth-first: the pages a limited crawl keeps are the ones nearest the start.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
# Pending requests as small pickles, not live objects: a 1M-URL queue in a
# few hundred MB instead of gigabytes (docs/benchmarks.md); start URLs too.
SCHEDULER_MEMORY_QUEUE = "middlewares.engine.queues.CompactFifoQueue"
SCHEDULER_START_MEMORY_QUEUE = "middlewares.engine.queues.CompactFifoQueue"
