"""memcached's text protocol, spoken through ``nc`` in the Pod's busybox sidecar (pure functions: no cluster).

Why this exists: the operand's data lives in memcached's memory only. The operator reaches it with ``ctx.exec`` in a
sidecar that shares the Pod's network (memcached's image holds nothing but memcached): each function here builds the
command to run or parses what it printed. Values travel as arguments of the command, never as shell text.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence

NC = 'printf "%s" "$1" | nc 127.0.0.1 11211'
"""The sidecar's shell: send the first argument to memcached (the ``quit`` at its end closes the connection)."""


def command(payload: str) -> list[str]:
    """The exec command sending ``payload`` (protocol text ending in ``quit``) to memcached."""
    return ["sh", "-c", NC, "memcached", payload]


def stats_request() -> str:
    return "stats\r\nquit\r\n"


def parse_stats(output: str) -> dict[str, str]:
    """``STAT name value`` lines as a mapping."""
    fields = (line.split(" ", 2) for line in output.splitlines() if line.startswith("STAT "))
    return {parts[1]: parts[2].strip() for parts in fields if len(parts) == 3}


def metadump_request() -> str:
    return "lru_crawler metadump all\r\nquit\r\n"


def parse_keys(output: str) -> list[str]:
    """The keys of a metadump (``key=<url-encoded> exp=... ...`` lines), sorted."""
    keys = []
    for line in output.splitlines():
        if line.startswith("key="):
            keys.append(urllib.parse.unquote(line.split(" ", 1)[0][len("key=") :]))
    return sorted(keys)


def get_request(keys: Sequence[str]) -> str:
    return f"get {' '.join(keys)}\r\nquit\r\n"


def parse_values(output: str) -> dict[str, str]:
    """``VALUE key flags bytes`` blocks as ``{key: value}`` (text values)."""
    values: dict[str, str] = {}
    lines = output.split("\r\n")
    index = 0
    while index < len(lines):
        parts = lines[index].split(" ")
        if parts[0] == "VALUE" and len(parts) >= 4 and index + 1 < len(lines):
            values[parts[1]] = lines[index + 1]
            index += 2
        else:
            index += 1
    return values


def set_request(values: Mapping[str, str]) -> str:
    """``set`` commands restoring ``values`` (no expiry, flags 0)."""
    parts = [f"set {key} 0 0 {len(value.encode())}\r\n{value}\r\n" for key, value in sorted(values.items())]
    return "".join(parts) + "quit\r\n"
