"""The contenders and how each is launched: same job, same concurrency, own process, own identity.

Why this exists: the harness treats contenders alike; what differs — the command line, the environment — lives
here, in one table. Every contender is given a kubeconfig for its own token user (the audit log attributes its
requests by that name), the namespace to watch, and ``workers`` concurrent reconciles:

============== ===============================================================================================
``raw``        ``python -m benchmarks.raw_floor``: a watch and a ``ThreadPoolExecutor(workers)``, no framework
``raw-okt``    the same with ``--okt-shaped``: the same number of writes, of the objects okt writes
``kopf``       ``kopf run benchmarks/kopf_operator.py --standalone``; ``settings.execution.max_workers`` = workers
``okt``        ``okt run samples/memcached/main.py --max-concurrent workers``, finalizer off
``okt-final``  the same with the sample's finalizer (and its inventory cleanup) on
``okt-merge``  ``okt`` writing its children with merge patches (``MEMCACHED_APPLY_STRATEGY=merge``), not apply
============== ===============================================================================================
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
from collections.abc import Mapping

ROOT = pathlib.Path(__file__).resolve().parent.parent
OKT_OPERATOR = ROOT / "samples" / "memcached" / "main.py"
OKT_FINALIZER_VARIABLE = "MEMCACHED_FINALIZER"
OKT_STRATEGY_VARIABLE = "MEMCACHED_APPLY_STRATEGY"
CRD = ROOT / "samples" / "memcached" / "deploy" / "crd.yaml"
WORKERS_VARIABLE = "OKT_BENCH_WORKERS"
"""How many handler threads the Kopf operator runs (it reads the variable at start-up)."""


@dataclasses.dataclass(frozen=True)
class Launch:
    argv: tuple[str, ...]
    env: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Contender:
    """One row of the comparison."""

    key: str
    label: str
    description: str
    ready_line: str | None = None
    """A line of its own log that says it watches (the harness also accepts its watch in the audit log, which can lag
    far behind after thousands of deletions)."""

    def launch(
        self, kubeconfig: pathlib.Path, namespace: str, workers: int, bin_dir: pathlib.Path | None = None
    ) -> Launch:
        """The command line and environment that run this contender on ``namespace`` (with ``bin_dir``'s tools)."""
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        bin_dir = bin_dir or pathlib.Path(sys.executable).parent
        if self.key in ("raw", "raw-okt"):
            argv = [
                str(bin_dir / "python"),
                "-m",
                "benchmarks.raw_floor",
                "--namespace",
                namespace,
                "--kubeconfig",
                str(kubeconfig),
                "--workers",
                str(workers),
                *(("--okt-shaped",) if self.key == "raw-okt" else ()),
            ]
        elif self.key == "kopf":
            env[WORKERS_VARIABLE] = str(workers)
            argv = [
                str(bin_dir / "kopf"),
                "run",
                str(ROOT / "benchmarks" / "kopf_operator.py"),
                "--namespace",
                namespace,
                "--standalone",
            ]
        else:
            env[OKT_FINALIZER_VARIABLE] = "on" if self.key == "okt-final" else "off"
            env[OKT_STRATEGY_VARIABLE] = "merge" if self.key == "okt-merge" else "apply"
            argv = [
                str(bin_dir / "okt"),
                "run",
                str(OKT_OPERATOR),
                "--namespace",
                namespace,
                "--kubeconfig",
                str(kubeconfig),
                "--max-concurrent",
                str(workers),
                "--metrics-bind-address",
                "0",
                "--webhook-port",
                "0",  # a free port: the sample's webhooks must not clash with another okt on this machine
                "--log-format",
                "json",
            ]
        if not pathlib.Path(argv[0]).exists():
            raise FileNotFoundError(
                f"{argv[0]} not found: run the harness with the project's interpreter (.venv/bin/python -m "
                "benchmarks.run), whose bin directory holds the okt and kopf commands"
            )
        return Launch(tuple(argv), env)


RAW = Contender("raw", "raw floor", "watch + thread pool, 4 writes per object, no framework", ready_line="watching")
RAW_OKT = Contender(
    "raw-okt",
    "raw floor, okt-shaped",
    "the floor writing okt's objects: five conditions, owner label, checksum annotation",
    ready_line="watching",
)
KOPF = Contender("kopf", "Kopf", "kopf.on.create/update/resume, pykube, kopf.adopt, defaults")
OKT_READY = "caches synced, reconciling"
OKT = Contender("okt", "okt", "the memcached sample, finalizer off", ready_line=OKT_READY)
OKT_MERGE = Contender(
    "okt-merge",
    "okt, merge patches",
    "the memcached sample, finalizer off, children by merge patch",
    ready_line=OKT_READY,
)
OKT_FINAL = Contender(
    "okt-final",
    "okt + finalizer",
    "the memcached sample, finalizer and inventory on",
    ready_line=OKT_READY,
)

ALL: tuple[Contender, ...] = (RAW, RAW_OKT, KOPF, OKT, OKT_MERGE, OKT_FINAL)


def by_key(key: str) -> Contender:
    for contender in ALL:
        if contender.key == key:
            return contender
    raise KeyError(f"unknown contender {key!r}; known: {', '.join(c.key for c in ALL)}")
