"""Per-site pacing shared by every machine of a deployment, through Redis (OMN-SITE, OMN-PAUSE).

``RedisPacing`` grants a site's start for every process sharing one Redis, in one atomic script: when the site's
next start has come, its pause is over and fewer than its concurrency are in flight; a grant books the next start
and leases an in-flight place. Each machine also says when it has sent (``sent``), which books the next start a
spacing after the send. Shared times are the Redis server's ``TIME``; Crawl-delay, slow-server spacing and pauses
live in Redis, and the ``PacingState`` methods answer from a local copy. Why: docs/architecture.md, "Inside the
larger modules".
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from string import Template
from typing import Any

import redis
import redis.asyncio

from synapsecrawl.errors import ConfigError
from synapsecrawl.pacing import DEFAULT_PREFIX
from synapsecrawl.pacing.clock import MARGIN, Margin, SiteClock
from synapsecrawl.pacing.keys import SPACING_LUA, site_keys
from synapsecrawl.pacing.redisclient import ASYNC_CONNECTIONS, async_redis, gated, sync_redis

__all__ = ["ASYNC_CONNECTIONS", "DEFAULT_PREFIX", "RedisPacing", "Turn", "async_redis", "check_redis"]

logger = logging.getLogger(__name__)


# A day: Crawl-delay and slow spacing are kept as long as robots.txt is (RFC 9309 §2.4), pauses longer.
_KEEP_SECONDS = 86_400
# KEYS: synapsecrawl.pacing.keys.site_keys: state hash, lease sorted set, unsent sorted set (granted leases
# whose request has not been said to be sent; lease id -> expiry). Shared by every script: the Redis time and
# the site's spacing (keys.SPACING_LUA).
# Every script's last three ARGV are the gap's margin (synapsecrawl.pacing.clock.MARGIN: ratio, cap, seconds).
_PRELUDE = Template("""
if redis.replicate_commands then redis.replicate_commands() end
$spacing_of
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = KEYS[1]
local spacing = site_spacing(state, ARGV[1])
local margin_ratio, margin_cap = tonumber(ARGV[#ARGV - 2]), tonumber(ARGV[#ARGV - 1])
local margin_seconds = tonumber(ARGV[#ARGV])
local function gap_of(s) return s + math.min(s * margin_ratio, margin_cap) + margin_seconds end
local gap = gap_of(spacing)
local function keep(until_)
  local ms = math.ceil((math.max(until_ - now, 0) + $keep) * 1000)
  redis.call('PEXPIRE', state, ms)
  redis.call('PEXPIRE', KEYS[2], ms)
  redis.call('PEXPIRE', KEYS[3], ms)
end
""").substitute(keep=_KEEP_SECONDS, spacing_of=SPACING_LUA)

# ARGV: delay, concurrency limit, lease seconds, lease id, poll seconds, skip Crawl-delay (0|1).
# Returns {granted 0|1, wait, spacing, paused_for} as strings (Lua numbers would be truncated to integers).
# A start that skips the site's Crawl-delay (SER-ROBOTS-FEEDS: a feed's first add) is due the crawl's delay
# (or a slow server's spacing) after the site's last start; it books the full spacing for the next.
_ACQUIRE = (
    _PRELUDE
    + """
local paused = tonumber(redis.call('HGET', state, 'paused') or '0')
local paused_for = math.max(paused - now, 0)
local next_start = tonumber(redis.call('HGET', state, 'next') or '0')
if ARGV[6] == '1' then
  local base = math.max(tonumber(ARGV[1]), tonumber(redis.call('HGET', state, 'slow') or '0'))
  next_start = math.min(next_start, tonumber(redis.call('HGET', state, 'last') or '0') + gap_of(base))
end
local wait = math.max(next_start - now, paused_for)
local reply = function(granted, w)
  return {granted, string.format('%.6f', w), string.format('%.6f', spacing), string.format('%.6f', paused_for)}
end
if wait > 0 then return reply(0, wait) end
for _, held in ipairs({KEYS[2], KEYS[3]}) do
  redis.call('ZREMRANGEBYSCORE', held, '-inf', now)
end
-- A start granted and not yet sent: its send time, which books the next start, is not known yet.
local full = redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2])
if full or redis.call('ZCARD', KEYS[3]) > 0 then
  local first = redis.call('ZRANGE', full and KEYS[2] or KEYS[3], 0, 0, 'WITHSCORES')
  return reply(0, math.max(math.min(tonumber(first[2]) - now, tonumber(ARGV[5])), 0.001))
end
redis.call('HSET', state, 'next', string.format('%.6f', now + gap), 'last', string.format('%.6f', now))
redis.call('ZADD', KEYS[2], string.format('%.6f', now + tonumber(ARGV[3])), ARGV[4])
redis.call('ZADD', KEYS[3], string.format('%.6f', now + tonumber(ARGV[3])), ARGV[4])
keep(math.max(now + tonumber(ARGV[3]), paused))
return reply(1, 0)
"""
)

# ARGV: delay, lease id. The request of the lease has been sent: the next start is due a spacing after now
# (this script runs after the send, so now is no earlier than it), for a lease already given back too.
_SENT = (
    _PRELUDE
    + """
redis.call('ZREM', KEYS[3], ARGV[2])
if now + gap > tonumber(redis.call('HGET', state, 'next') or '0') then
  redis.call('HSET', state, 'next', string.format('%.6f', now + gap))
end
if now > tonumber(redis.call('HGET', state, 'last') or '0') then
  redis.call('HSET', state, 'last', string.format('%.6f', now))
end
keep(math.max(now + gap, tonumber(redis.call('HGET', state, 'paused') or '0')))
return 1
"""
)

# ARGV: delay, lease id, seconds since the request reached the server (negative: unknown).
_RELEASE = (
    _PRELUDE
    + """
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
local ago = tonumber(ARGV[3])
if ago >= 0 then
  local next_start = tonumber(redis.call('HGET', state, 'next') or '0')
  if now - ago + gap > next_start then
    redis.call('HSET', state, 'next', string.format('%.6f', now - ago + gap))
  end
  if now - ago > tonumber(redis.call('HGET', state, 'last') or '0') then
    redis.call('HSET', state, 'last', string.format('%.6f', now - ago))
  end
end
return 1
"""
)

# ARGV: delay, seconds to pause. A longer pause already set stands.
_PAUSE = (
    _PRELUDE
    + """
local until_ = now + tonumber(ARGV[2])
local paused = tonumber(redis.call('HGET', state, 'paused') or '0')
if until_ > paused then
  redis.call('HSET', state, 'paused', string.format('%.6f', until_))
  paused = until_
end
keep(paused)
return string.format('%.6f', paused - now)
"""
)

# ARGV: delay, field ('spacing' or 'slow'), seconds.
_SET = (
    _PRELUDE
    + """
redis.call('HSET', state, ARGV[2], string.format('%.6f', tonumber(ARGV[3])))
-- A longer spacing learned after a start (robots.txt's Crawl-delay, read once it answered) counts from that
-- start: a machine without a local record of it must not start a spacing of the old length after it.
local longer = math.max(spacing, tonumber(ARGV[3]))
local last = tonumber(redis.call('HGET', state, 'last') or '0')
if last > 0 and last + gap_of(longer) > tonumber(redis.call('HGET', state, 'next') or '0') then
  redis.call('HSET', state, 'next', string.format('%.6f', last + gap_of(longer)))
end
keep(tonumber(redis.call('HGET', state, 'paused') or '0'))
return 1
"""
)

# ARGV: delay, signal (0|1: a 429/503 or a Retry-After), status (0: none), 403s in a row that pause (0: never).
# Applies one answer to the site's streaks (synapsecrawl.pacing.backoff._judge_site's arithmetic) and returns them
# as they were before it: answers from every machine are counted in Redis's order.
_STREAKS = (
    _PRELUDE
    + """
local slow = tonumber(redis.call('HGET', state, 'slow_streak') or '0')
local forbidden = tonumber(redis.call('HGET', state, 'forbidden_streak') or '0')
local status, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
local new_slow, new_forbidden = slow, forbidden
if ARGV[2] == '1' then new_slow = slow + 1 elseif status > 0 and status < 400 then new_slow = 0 end
if status == 403 then new_forbidden = forbidden + 1 elseif status > 0 then new_forbidden = 0 end
if limit > 0 and new_forbidden >= limit then new_forbidden = 0 end
redis.call('HSET', state, 'slow_streak', new_slow, 'forbidden_streak', new_forbidden)
keep(tonumber(redis.call('HGET', state, 'paused') or '0'))
return {slow, forbidden}
"""
)

# ARGV: delay, slow streak, forbidden streak: what the store remembers, unless Redis already knows the site.
_SEED = (
    _PRELUDE
    + """
redis.call('HSETNX', state, 'slow_streak', ARGV[2])
redis.call('HSETNX', state, 'forbidden_streak', ARGV[3])
keep(tonumber(redis.call('HGET', state, 'paused') or '0'))
return 1
"""
)


@dataclass(frozen=True)
class Turn:
    """The answer to "may a request to this site start now?".

    ``lease`` is set when it may (give it back with ``release``); otherwise
    ``wait`` says how many seconds to wait before asking again.
    """

    lease: str | None
    wait: float

    @property
    def granted(self) -> bool:
        return self.lease is not None


@dataclass
class RedisPacing:
    """A ``PacingState`` whose starts, in-flight counts, spacings and pauses live in Redis.

    ``clock`` is this machine's monotonic clock, used only to turn local pause
    times into durations and back; ``prefix`` separates deployments (and tests)
    sharing one Redis. Its keys are ``synapsecrawl.pacing.keys``'.
    """

    url: str
    delay: float
    crawl_delay_cap: float
    concurrency: int
    lease_seconds: float
    prefix: str = DEFAULT_PREFIX
    poll_seconds: float = 0.25
    clock: Callable[[], float] = time.monotonic
    report_outages: bool = True  # one warning per site whose turn Redis failed to give
    margin: Margin = MARGIN
    _local: SiteClock = field(init=False)
    _shared_spacing: dict[str, float] = field(init=False, default_factory=dict)
    _written: dict[tuple[str, str], float] = field(init=False, default_factory=dict)
    _failing: set[str] = field(init=False, default_factory=set)
    _streaks: dict[str, tuple[int, int]] = field(init=False, default_factory=dict)  # as this machine last saw
    failures: int = field(init=False, default=0)  # calls Redis failed to answer (the crawl's stats say so)
    _sync: Any = field(init=False)  # redis.Redis, or redis.cluster.RedisCluster (synapsecrawl.pacing.redisclient)
    _async: Any = field(init=False, default=None)
    _gate: asyncio.Semaphore = field(init=False, default_factory=lambda: asyncio.Semaphore(ASYNC_CONNECTIONS))
    _scripts: dict[str, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._local = SiteClock(delay=self.delay, crawl_delay_cap=self.crawl_delay_cap)
        self._sync = sync_redis(self.url)

    def _args(self, *args: object) -> list[object]:
        """A script's ARGV: the crawl's delay, ``args``, then the margin."""
        return [self.delay, *args, *self.margin]

    def _keys(self, site: str) -> list[str]:
        return site_keys(self.prefix, site)

    def _script(self, name: str, source: str, *, asynchronous: bool = False) -> Any:
        key = f"{name}/{'async' if asynchronous else 'sync'}"
        if key not in self._scripts:
            client: Any = self._sync
            if asynchronous:
                if self._async is None:
                    self._async = async_redis(self.url)
                    self._gate = asyncio.Semaphore(ASYNC_CONNECTIONS)
                client = self._async
            script = client.register_script(source)
            # one Redis: the blocking pool already makes a call wait for a connection
            cluster = asynchronous and not isinstance(client, redis.asyncio.Redis)
            self._scripts[key] = gated(script, self._gate) if cluster else script
        return self._scripts[key]

    # PacingState: reads are local; writes go to Redis as well.

    def spacing(self, site: str) -> float:
        """Seconds between starts for ``site``, as this machine last heard it."""
        return max(self._local.spacing(site), self._shared_spacing.get(site, 0.0))

    def spacing_without_crawl_delay(self, site: str) -> float:
        """This machine's spacing for a request the site's Crawl-delay does not hold (SER-ROBOTS-FEEDS);
        the grant in Redis applies the shared slow spacing too."""
        return self._local.spacing_without_crawl_delay(site)

    def set_crawl_delay(self, site: str, crawl_delay: float | None) -> float:
        """Record the site's Crawl-delay for every machine; return the spacing that now applies."""
        spacing = self._local.set_crawl_delay(site, crawl_delay)
        self._write(site, "spacing", spacing)
        return self.spacing(site)

    def note_crawl_delay(self, site: str, crawl_delay: float | None) -> float:
        """The site's Crawl-delay, read from a robots.txt fetched under a shared frontier lease's start: this
        machine's at once; Redis is told as that lease ends (``synapsecrawl.shared.frontier``), in the same
        round trip, before another start at the site is granted. Returns the Crawl-delay spacing to tell."""
        spacing = self._local.set_crawl_delay(site, crawl_delay)
        self._written[site, "spacing"] = spacing
        return spacing

    def set_spacing(self, site: str, spacing: float) -> None:
        """The slow-server spacing (SNA-SLOW), for every machine."""
        self._local.set_spacing(site, spacing)
        self._write(site, "slow", spacing)

    def note_spacing(self, site: str, spacing: float) -> None:
        """The slow-server spacing of an answer whose start a shared frontier lease holds: this machine's at
        once; Redis is told as the lease ends (``synapsecrawl.shared.frontier``), in the same round trip,
        before the site's place is free for another start."""
        self._local.set_spacing(site, spacing)
        self._written[site, "slow"] = spacing

    def pause(self, site: str, until: float) -> None:
        """Hold ``site`` on every machine until ``until`` (this machine's clock); a longer pause stands."""
        self._local.pause(site, until)
        now = self.clock()
        try:
            paused_for = float(self._script("pause", _PAUSE)(keys=self._keys(site), args=self._args(until - now)))
        except redis.RedisError as error:
            self._unreachable(site, error)
            return
        self._local.pause(site, now + paused_for)

    def paused_until(self, site: str) -> float:
        """When ``site`` may be asked again, on this machine's clock (0.0 when not paused)."""
        return self._local.paused_until(site)

    # The shared turn.

    async def acquire(self, site: str, *, skip_crawl_delay: bool = False) -> Turn:
        """Ask Redis for a start at ``site`` now; learn its shared spacing and pause on the way.

        ``skip_crawl_delay``: a start the site's Crawl-delay does not hold (a feed's first add,
        SER-ROBOTS-FEEDS): due the crawl's delay after the site's last start; a pause still holds it.
        """
        lease = uuid.uuid4().hex
        asked = self.clock()
        try:
            granted, wait, spacing, paused_for = await self._script("acquire", _ACQUIRE, asynchronous=True)(
                keys=self._keys(site),
                args=self._args(self.concurrency, self.lease_seconds, lease, self.poll_seconds, int(skip_crawl_delay)),
            )
        except redis.RedisError as error:  # not knowing means "not yet" (fail toward politeness)
            self._unreachable(site, error)
            return Turn(None, max(self.spacing(site), 1.0))
        self._failing.discard(site)
        self._shared_spacing[site] = float(spacing)
        if float(paused_for) > 0:
            self._local.pause(site, asked + float(paused_for))
        return Turn(lease if int(granted) else None, 0.0 if int(granted) else float(wait))

    async def sent(self, site: str, lease: str) -> None:
        """Say that the request of ``lease`` has gone out: call it after the send, never before.

        The site's next start, for every machine, is then due a spacing after now, and other
        starts, held while this one was granted but unsent, may be granted again.
        """
        try:
            await self._script("sent", _SENT, asynchronous=True)(keys=self._keys(site), args=self._args(lease))
        except redis.RedisError as error:  # the site stays held until the lease expires
            self._unreachable(site, error)

    async def release(self, site: str, lease: str, arrived_ago: float | None = None) -> None:
        """Give back ``lease``; a request that reached the server ``arrived_ago`` seconds ago
        pushes the site's next start to a spacing after that arrival."""
        ago = -1.0 if arrived_ago is None else max(0.0, arrived_ago)
        try:
            await self._script("release", _RELEASE, asynchronous=True)(
                keys=self._keys(site), args=self._args(lease, ago)
            )
        except redis.RedisError as error:  # the lease expires on its own
            self._unreachable(site, error)

    def streaks(self, site: str, *, signal: bool, status: int | None, forbidden_limit: int) -> tuple[int, int] | None:
        """Count one answer in the site's shared streaks (pauses in a row, 403s in a row); return them as
        they stood before it, so every machine's 403s count toward one streak. None if Redis failed.

        An answer that adds to no streak and would reset none this machine knows of (a 200 at a site whose
        streaks it last saw at zero) is not sent: one round trip a page less. A streak another machine began
        meanwhile then stays, which pauses the site sooner, never later (fail toward politeness).
        """
        known = self._streaks.get(site, (0, 0))
        if not signal and status != 403 and _counted(known, signal, status, forbidden_limit) == known:
            return known
        try:
            slow, forbidden = self._script("streaks", _STREAKS)(
                keys=self._keys(site), args=self._args(1 if signal else 0, status or 0, forbidden_limit)
            )
        except redis.RedisError as error:
            self._unreachable(site, error)
            return None
        self._streaks[site] = _counted((int(slow), int(forbidden)), signal, status, forbidden_limit)
        return int(slow), int(forbidden)

    def seed_streaks(self, site: str, slow: int, forbidden: int) -> None:
        """What the store remembers of the site's streaks, unless another machine already counts them."""
        if slow or forbidden:  # an answer that resets them is then told Redis (streaks)
            self._streaks[site] = (slow, forbidden)
        try:
            self._script("seed", _SEED)(keys=self._keys(site), args=self._args(slow, forbidden))
        except redis.RedisError as error:
            self._unreachable(site, error)

    def heard_crawl_delay(self, site: str, spacing: float) -> None:
        """Redis holds ``spacing`` as ``site``'s Crawl-delay spacing (a shared frontier's lease said so): the
        same value read again from its robots.txt copy is not written again."""
        self._written[site, "spacing"] = spacing

    def _write(self, site: str, name: str, value: float) -> None:
        if math.isclose(self._written.get((site, name), -1.0), value):
            return  # slow: measured on every answer; spacing: read by every worker: write only a change
        try:
            self._script("set", _SET)(keys=self._keys(site), args=self._args(name, value))
        except redis.RedisError as error:
            self._unreachable(site, error)
            return
        self._written[site, name] = value

    def _unreachable(self, site: str, error: redis.RedisError) -> None:
        self.failures += 1
        if site not in self._failing:
            self._failing.add(site)
            if not self.report_outages:  # a shared crawl's frontier says it once for the whole worker
                logger.debug("pacing: Redis failed for %s (%s)", site, error)
                return
            logger.warning(
                "pacing: Redis at %s failed for %s (%s): holding the site until it answers", self.url, site, error
            )

    def ping(self) -> None:
        """Raise ``redis.RedisError`` unless Redis answers."""
        self._sync.ping()

    async def aclose(self) -> None:
        """Close both connections."""
        if self._async is not None:
            await self._async.aclose()
            self._async = None
            self._scripts = {key: script for key, script in self._scripts.items() if key.endswith("/sync")}
        self._sync.close()


def _counted(streaks: tuple[int, int], signal: bool, status: int | None, forbidden_limit: int) -> tuple[int, int]:
    """The streaks after one answer: ``_STREAKS``' arithmetic, for the answers this machine need not send."""
    slow, forbidden = streaks
    code = status or 0
    if signal:
        slow += 1
    elif 0 < code < 400:
        slow = 0
    if code == 403:
        forbidden += 1
    elif code > 0:
        forbidden = 0
    if forbidden_limit > 0 and forbidden >= forbidden_limit:
        forbidden = 0
    return slow, forbidden


def check_redis(url: str) -> None:
    """Raise ``ConfigError`` (one line) unless ``url`` is empty or a Redis that answers.

    Checked before a crawl starts: once it runs, a Redis that does not answer
    holds every site (fail toward politeness), and the crawl would never end.
    """
    if not url:
        return
    try:
        client = redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
    except ValueError as error:
        raise ConfigError(f"PACING_REDIS_URL {url!r} is not a Redis URL: {error}") from None
    try:
        client.ping()
    except redis.RedisError as error:
        raise ConfigError(f"PACING_REDIS_URL {url!r} does not answer: {error}") from None
    finally:
        client.close()
