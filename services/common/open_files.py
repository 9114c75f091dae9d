"""`raise_open_files_limit`: lift this process's soft RLIMIT_NOFILE to what its connections need.

Every request in flight holds a socket, and one awaiting a remote judge holds a second one to the judge.
Python does not raise the soft limit (often 1024) by itself, so past it `accept()` fails with EMFILE (asyncio
pauses accepting) and outbound connects fail: a judge call would end in a connection error, a failed reward.
The soft limit may be raised up to the hard limit without privileges; past the hard limit only the operator
can help (`ulimit -Hn`, systemd `LimitNOFILE=`, compose `ulimits: nofile`), so that is logged.
"""

from __future__ import annotations

import logging
import resource

logger = logging.getLogger(__name__)


def raise_open_files_limit(needed: int, what: str) -> int:
    """Raise the soft limit towards `needed` (never lower it); returns the soft limit now in force. `what`
    names the settings behind `needed` for the warning when the hard limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft != resource.RLIM_INFINITY and soft < needed:
        logger.warning(
            "open-files limit %d is below the %d sockets %s may hold: past it new connections fail; raise "
            "the hard limit (ulimit -Hn, systemd LimitNOFILE=, compose ulimits: nofile) or lower them",
            soft,
            needed,
            what,
        )
    return soft
