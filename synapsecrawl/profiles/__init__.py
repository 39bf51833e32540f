"""The five bot profiles, as data (see profile.py)."""

from synapsecrawl.profiles.profile import (
    PROFILE_NAMES,
    BackoffPolicy,
    Limits,
    Profile,
    RobotsPolicy,
    WebPolicy,
    load_profile,
    lower_limits,
    resolve_limits,
)

__all__ = [
    "PROFILE_NAMES",
    "BackoffPolicy",
    "Limits",
    "Profile",
    "RobotsPolicy",
    "WebPolicy",
    "load_profile",
    "lower_limits",
    "resolve_limits",
]
