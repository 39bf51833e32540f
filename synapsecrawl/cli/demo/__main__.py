"""``make demo``: serve the sample site on 127.0.0.1, crawl it, show what was kept and why.

Runs exactly what a user runs: ``scrapy crawl site`` and ``synapsecrawl kb ...`` as
subprocesses, offline, into ``.synapsecrawl/demo.sqlite3``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

HOST = "greenhouse.demo.test"
KB = Path(".synapsecrawl/demo.sqlite3")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"  site log: {args[0]} {args[1]}\n")


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def main() -> int:
    """Serve, crawl, print. Returns the exit status."""
    root = resources.files("synapsecrawl.cli.demo").joinpath("site")
    with resources.as_file(root) as site_dir:
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(site_dir)))
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.server_address[1]
        start = f"http://{HOST}:{port}/"
        KB.parent.mkdir(exist_ok=True)
        KB.unlink(missing_ok=True)
        uri = f"sqlite:///{KB}"
        print(f"== Serving the sample site on 127.0.0.1:{port} as {HOST}; crawling {start}")
        print("   (the site's own access log follows: robots.txt first, /private/ never)")
        crawl = subprocess.run(
            [_tool("scrapy"), "crawl", "site", "-a", f"url={start}", "-a", "kb=demo",
             "-s", f"KB_URI={uri}", "-s", f"HOST_RESOLVE={HOST}=127.0.0.1", "-s", "ALLOW_PRIVATE_ADDRESSES=True",
             "-s", "DOWNLOAD_DELAY=0.1", "-s", "LOG_LEVEL=INFO"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        server.shutdown()
        server.server_close()
    if crawl.returncode != 0:
        sys.stderr.write(crawl.stderr[-4000:])
        print("== The crawl failed; its log is above.")
        return 1
    print("\n== What the crawl did (from its log):")
    for line in crawl.stderr.splitlines():
        if "crawl summary" in line or (line.startswith("2") and ("noindex" in line or "robots" in line.lower())):
            print("  ", line.split("] ", 1)[-1])
        elif line.startswith("  ") and ": fetched" in line:
            print("  ", line.strip())
    print(f"\n== synapsecrawl kb list --uri {uri} --kb demo")
    subprocess.run([_tool("synapsecrawl"), "kb", "list", "--uri", uri, "--kb", "demo"], check=False)
    print(f"\n== synapsecrawl kb search 'water seedlings' --uri {uri}")
    subprocess.run([_tool("synapsecrawl"), "kb", "search", "water seedlings", "--uri", uri], check=False)
    print("\n== Kept: the pages robots.txt allows and that are not noindex. Skipped: /private/ (robots.txt),")
    print("   the draft chapter (noindex). The knowledge base is", KB)
    return 0


if __name__ == "__main__":
    sys.exit(main())
