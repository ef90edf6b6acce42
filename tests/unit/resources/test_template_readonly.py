"""What a render walks to keep what its template reads read-only: everything its variables reach that a template can
get hold of, and nothing of the I/O and concurrency machinery they hold."""

from __future__ import annotations

import logging
import threading
import types
from typing import Any

import requests

from okt.resources import template_readonly
from tests.unit.kube import loopback


def test_the_walk_stops_at_a_client_a_session_a_logger_and_a_lock_the_params_hold() -> None:
    # each render calling a changing method (a template's own ns.v.append(...) too) walked all a params object
    # referred to: the client's session, adapters, connection pools, TLS settings, its kinds table, and through a
    # logger the logging module's every logger, handler and lock (hundreds of objects, a millisecond a render)
    hosts = ["a", "b"]
    machinery: dict[str, Any] = {
        "client": loopback.client_for(9),  # nobody listens: building it sends nothing
        "session": requests.Session(),
        "log": logging.getLogger("operator"),
        "lock": threading.Lock(),
        "event": threading.Event(),
    }
    params = {"hosts": hosts, **machinery}

    assert template_readonly.reachable([params]) == {id(params), id(hosts), *map(id, machinery.values())}


def test_the_walk_still_enters_the_operators_own_objects_beside_the_machinery() -> None:
    hosts, labels = ["a"], {"app": "web"}
    settings = types.SimpleNamespace(
        hosts=hosts, labels=labels, client=loopback.client_for(9), log=logging.getLogger("operator")
    )

    walked = template_readonly.reachable([{"settings": settings}])

    assert {id(settings), id(hosts), id(labels), id(settings.client), id(settings.log)} <= walked
    assert id(settings.client.stats) not in walked
    assert id(logging.root) not in walked
