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


def _efficiency(run: dict[str, Any]) -> tuple[float, bool]:
    """A run's efficiency, projected at the page rate it kept if it was stopped at its time limit."""
    if not run.get("killed"):
        return run["efficiency"], False
    rate = run["pages_ok"] / run["makespan"] if run["makespan"] > 0 else 0.0
    return (run["ideal"] * rate / run["expected_pages"] if rate else 0.0), True


def plot_efficiency(results: list[dict[str, Any]], path: Path, cpu_bound_rate: float = 20.0) -> None:
    """Efficiency (ideal / makespan) against the number of hosts, ours and stock Scrapy.

    Runs whose sites ask for more than ``cpu_bound_rate`` pages a second, or whose one page per site
    falls due at once, are drawn apart (x): there the crawl's CPU, not politeness, is the bound.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    uniform = [r for r in results if len(r["delays"]) == 1]
    for crawler, color in (("synapsecrawl", "tab:blue"), ("stock scrapy", "tab:orange")):
        paced, cpu_bound = [], []
        for r in uniform:
            for run in r["runs"]:
                if run["crawler"] != crawler:
                    continue
                eff, stopped = _efficiency(run)
                point = (r["hosts"], eff, stopped, f"P={r['pages']}, d={r['delays'][0]:g} s")
                bound = r["hosts"] / r["delays"][0] > cpu_bound_rate or r["pages"] == 1
                (cpu_bound if bound else paced).append(point)
        paced.sort()
        if paced:
            ax.plot([p[0] for p in paced], [p[1] for p in paced], color=color, label=crawler)
        for hosts, eff, stopped, label in paced:
            ax.scatter([hosts], [eff], color=color, marker="o", facecolors="none" if stopped else color)
            ax.annotate(
                label + (" (projected)" if stopped else ""),
                (hosts, eff),
                textcoords="offset points",
                xytext=(5, 5),
                fontsize=7,
            )
        for hosts, eff, _, label in cpu_bound:
            ax.scatter([hosts], [eff], color=color, marker="x")
            ax.annotate(label + " (CPU-bound)", (hosts, eff), textcoords="offset points", xytext=(5, -10), fontsize=7)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("hosts crawled in parallel")
    ax.set_ylabel("efficiency = ideal makespan / makespan")
    ax.set_title("Politeness efficiency (hollow: stopped at its time limit, projected)")
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
    ax.step(
        [0, *steps],
        [0, *[result["hosts"] * (n + 1) for n in range(result["pages"])]],
        where="post",
        color="grey",
        ls="--",
        label="ideal",
    )
    ax.set_ylim(0, total * 1.05)
    ax.set_xlabel("seconds since the first request")
    ax.set_ylabel("pages fetched")
    ax.set_title(f"{result['hosts']} hosts x {result['pages']} pages, Crawl-delay {delay:g} s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
