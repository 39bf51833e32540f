"""The benchmark plots (PNG, matplotlib, a bench-only dependency: ``pip install -e .[bench]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_efficiency", "plot_progress", "plot_timeline"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_efficiency(results: list[dict[str, Any]], path: Path) -> None:
    """Efficiency (ideal / makespan) against the number of hosts, ours and stock Scrapy."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    uniform = [r for r in results if len(r["delays"]) == 1]
    for crawler, marker in (("synapsecrawl", "o"), ("stock scrapy", "s")):
        points = sorted((r["hosts"], run["efficiency"], r) for r in uniform for run in r["runs"]
                        if run["crawler"] == crawler)
        if not points:
            continue
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, label=crawler)
        for hosts, eff, r in points:
            ax.annotate(f"P={r['pages']}, d={r['delays'][0]:g}s", (hosts, eff), textcoords="offset points",
                        xytext=(4, 6), fontsize=7)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("hosts crawled in parallel")
    ax.set_ylabel("efficiency = ideal makespan / makespan")
    ax.set_title("Politeness efficiency (0 violations for synapsecrawl)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_timeline(result: dict[str, Any], path: Path) -> None:
    """Request arrivals at a few hosts, as the server logged them, ours above stock Scrapy."""
    plt = _pyplot()
    crawlers = list(result["timelines"])
    fig, axes = plt.subplots(len(crawlers), 1, figsize=(9, 1.2 + 1.6 * len(crawlers)), sharex=True, squeeze=False)
    delay = result["delays"][0]
    end = max((t for tl in result["timelines"].values() for ts in tl.values() for t in ts), default=1.0)
    for ax, crawler in zip(axes[:, 0], crawlers, strict=True):
        timeline = result["timelines"][crawler]
        for row, (host, times) in enumerate(timeline.items()):
            ax.scatter(times, [row] * len(times), marker="|", s=120)
            ax.text(-0.01 * end, row, host, ha="right", va="center", fontsize=7)
        ideal = 0.0
        while ideal <= end:
            ax.axvline(ideal, color="grey", lw=0.4, alpha=0.5)
            ideal += delay
        ax.set_yticks([])
        ax.set_title(f"{crawler}: each tick is one request arriving (grid: Crawl-delay {delay:g} s)", fontsize=9)
    axes[-1, 0].set_xlabel("seconds since the first request")
    fig.suptitle(f"{result['hosts']} hosts x {result['pages']} pages", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_progress(result: dict[str, Any], path: Path) -> None:
    """Pages fetched over time, against the ideal (every host paced exactly, all in parallel)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for crawler, arrivals in result["arrivals"].items():
        pages = sorted(arrivals["pages"])
        ax.plot(pages, range(1, len(pages) + 1), label=crawler)
    delay = max(result["delays"])
    total = result["hosts"] * result["pages"]
    steps = [(n + 1) * delay for n in range(result["pages"])]
    ax.step([0, *steps], [0, *[result["hosts"] * (n + 1) for n in range(result["pages"])]], where="post",
            color="grey", ls="--", label="ideal")
    ax.set_ylim(0, total * 1.05)
    ax.set_xlabel("seconds since the first request")
    ax.set_ylabel("pages fetched")
    ax.set_title(f"{result['hosts']} hosts x {result['pages']} pages, Crawl-delay {delay:g} s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
