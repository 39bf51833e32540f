"""``synapsecrawl kb reextract --warc`` and ``synapsecrawl import warc``: stored captures into a knowledge base.

    synapsecrawl kb reextract --warc DIR --uri KB_URI [--kb NAME] [--profile NAME] [--removal-list FILE] [--processes N]
    synapsecrawl import warc FILE... --uri KB_URI [--kb NAME] [--profile NAME] [--removal-list FILE] [--processes N]

Both read WARC files (``synapsecrawl.warc``) and ask nothing of any site. ``kb reextract`` reads a
crawl's WARC_DIR again with today's extraction, each capture under the profile its file names (else
``--profile``); ``import warc`` takes Common Crawl's WARC or WET files under ``--profile``. One summary
line on stdout; a file that breaks off is one line on stderr and exit status 1, after everything
readable (of it and of the other files) is in the knowledge base.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from synapsecrawl.errors import ConfigError, SynapseError
from synapsecrawl.kb import DEFAULT_KB_URI, open_store
from synapsecrawl.profiles import PROFILE_NAMES, Profile, load_profile

__all__ = ["register"]

_KB_NAME = re.compile(r"^[\w.-]{1,100}$")


def _common(parser: argparse.ArgumentParser, profile_help: str) -> None:
    parser.add_argument("--uri", default=DEFAULT_KB_URI, help="KB_URI (default: %(default)s)")
    parser.add_argument("--kb", default="default", help="the knowledge base to update (default: %(default)s)")
    parser.add_argument("--profile", choices=PROFILE_NAMES, default=None, help=profile_help)
    parser.add_argument("--removal-list", default="", help="REMOVAL_LIST: domains and URL prefixes never stored")
    parser.add_argument(
        "--processes", default="auto", help="pages read at once in worker processes, as EXTRACT_PROCESSES (0: here)"
    )


def register(commands: Any, kb_commands: Any) -> None:
    """Add ``kb reextract`` to ``kb_commands`` and ``import warc`` to ``commands``."""
    reextract = kb_commands.add_parser("reextract", help="read a WARC_DIR's captures again, no request to any site")
    reextract.add_argument("--warc", required=True, help="a WARC_DIR (its .warc.gz files, searched recursively)")
    _common(reextract, "the profile of captures whose file names none (default: synapsebot)")
    reextract.set_defaults(handler=_reextract)

    importing = commands.add_parser("import", help="import captures into a knowledge base")
    kinds = importing.add_subparsers(dest="import_command", required=True)
    warc = kinds.add_parser("warc", help="Common Crawl WARC or WET files, under a profile's rules")
    warc.add_argument("files", nargs="+", help="WARC (.warc, .warc.gz) or WET (.warc.wet.gz) files")
    _common(warc, "whose rules apply (default: synapsebot)")
    warc.set_defaults(handler=_import)


def _reextract(args: argparse.Namespace) -> int:
    directory = Path(args.warc)
    if not directory.is_dir():
        raise SynapseError(f"--warc {directory}: not a directory")
    return _run(args, [directory], "reextract", own_profile=True)


def _import(args: argparse.Namespace) -> int:
    for name in args.files:
        if not Path(name).is_file():
            raise SynapseError(f"{name}: no such file")
    return _run(args, [Path(name) for name in args.files], "import", own_profile=False)


def _run(args: argparse.Namespace, paths: list[Path], mode: Any, *, own_profile: bool) -> int:
    from synapsecrawl.kb.removals import RemovalList, read_removal_list
    from synapsecrawl.warc.captures import Capture, warc_files
    from synapsecrawl.warc.load import load

    logging.getLogger("warcio").setLevel(logging.ERROR)  # what it warns of, a broken file says in its one line
    if not _KB_NAME.match(args.kb):
        raise ConfigError(f"kb {args.kb!r} may hold only letters, digits, '.', '_' and '-'")
    from synapsecrawl.extract.pool import extract_processes

    try:
        processes = extract_processes(args.processes)
    except ValueError as error:
        raise ConfigError(str(error).replace("EXTRACT_PROCESSES", "--processes")) from None
    removals = read_removal_list(args.removal_list) if args.removal_list else RemovalList()
    default = args.profile or "synapsebot"
    profile = cache(load_profile)

    def profile_for(capture: Capture) -> Profile:
        name = capture.profile if own_profile and capture.profile in PROFILE_NAMES else default
        return profile(name)

    files = warc_files(paths)
    if not files:
        raise SynapseError(f"{paths[0]}: no WARC files (.warc, .warc.gz, .wet.gz) there")
    store = open_store(args.uri)
    try:
        report = load(
            files, store, kb=args.kb, profile_for=profile_for, mode=mode, removals=removals, processes=processes
        )
    finally:
        store.close()
    sys.stdout.write(report.line(mode) + "\n")
    for line in report.malformed:
        sys.stderr.write(f"synapsecrawl: {line}\n")
    return 1 if report.malformed else 0
