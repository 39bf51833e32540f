"""``synapsecrawl publish``: the static files an operator serves for site owners.

    synapsecrawl publish --out DIR [--profile NAME] [--key PATH ...]

With ``--profile``, DIR is the web root of the host in the bot's User-Agent
link: the bot's page goes at that link's path (``index.html`` and
``index.md``), and for a bot that signs, the key directory (the JWKS of
``--key``) at ``/.well-known/http-message-signatures-directory``. Without it,
every bot is written, each under ``DIR/HOST/`` as its own web root. Each file
written is one line on stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlsplit

from synapsecrawl.cli.keys import directory_body
from synapsecrawl.errors import SynapseError
from synapsecrawl.profiles.profile import PROFILE_NAMES, read_profile_data
from synapsecrawl.report.bot_templates import Bot, bot_of
from synapsecrawl.report.botpage import render
from synapsecrawl.signing import DIRECTORY_PATH

__all__ = ["publish", "register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``publish`` to the ``synapsecrawl`` parser."""
    publish_parser = commands.add_parser("publish", help="write the bot page(s) and key directory to serve")
    publish_parser.add_argument("--out", required=True, help="the web root to write into")
    publish_parser.add_argument("--profile", choices=PROFILE_NAMES, help="one bot (default: all, each under DIR/HOST/)")
    publish_parser.add_argument(
        "--key",
        action="append",
        default=[],
        help="a signing bot's private key file (repeatable): its public half is published",
    )
    publish_parser.set_defaults(handler=_publish)


def _page_path(bot: Bot) -> str:
    """The bot page's directory, from the path of its address (``/bot/`` and ``/bot`` are both ``bot``)."""
    return urlsplit(bot.url).path.strip("/")


def publish(root: Path, bot: Bot, key_paths: list[str]) -> list[Path]:
    """Write ``bot``'s page, and its key directory if it signs, under web root ``root``; return the files."""
    name = bot.profile.name
    if key_paths and not bot.profile.signs:
        raise SynapseError(f"{name} does not sign its requests: it has no key directory (leave out --key)")
    if bot.profile.signs and not key_paths:
        raise SynapseError(f"{name} signs its requests: --key PATH is needed to publish its key directory")
    body = directory_body(key_paths) if key_paths else ""  # read the keys before writing anything
    where = root / _page_path(bot)
    written = []
    try:
        where.mkdir(parents=True, exist_ok=True)
        for fmt, filename in (("html", "index.html"), ("md", "index.md")):
            (where / filename).write_text(render(bot, fmt), "utf-8")
            written.append(where / filename)
        if body:
            directory = root / DIRECTORY_PATH.lstrip("/")
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.write_text(body, "utf-8")
            written.append(directory)
    except OSError as exc:
        raise SynapseError(f"--out {root}: {exc.strerror or exc}") from None
    return written


def _publish(args: argparse.Namespace) -> int:
    root = Path(args.out)
    names = [args.profile] if args.profile else list(PROFILE_NAMES)
    bots = [bot_of(name, read_profile_data(name)) for name in names]
    for bot in bots:
        if args.profile:
            files = publish(root, bot, args.key)
        else:  # each bot on its own host; a key goes only to the bots that sign
            files = publish(root / urlsplit(bot.url).netloc, bot, args.key if bot.profile.signs else [])
        for path in files:
            sys.stdout.write(f"wrote {path}\n")
    return 0
