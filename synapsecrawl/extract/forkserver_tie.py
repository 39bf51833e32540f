"""The extraction forkserver's first preload: ties the server to the crawler that started it.

``synapsecrawl.extract.pool`` names this module first in ``set_forkserver_preload``,
so the server imports it as it starts; importing it runs ``lifeline.bind_server``,
which does nothing outside a forkserver started by a crawler (``extract.lifeline``).
"""

from __future__ import annotations

from synapsecrawl.extract.lifeline import bind_server

__all__: list[str] = []

bind_server()
