"""The contenders and how each is launched: same job, same concurrency, own process, own identity (see
"What is compared" in ``benchmarks/README.md``)."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
from collections.abc import Mapping

from okt.testing import process

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRD = ROOT / "samples" / "memcached" / "deploy" / "crd.yaml"
WORKERS_VARIABLE = "OKT_BENCH_WORKERS"
RAW_FLOOR = "{bin}/python -m benchmarks.raw_floor --namespace {namespace} --kubeconfig {kubeconfig} --workers {workers}"
KOPF_RUN = "{bin}/kopf run {root}/benchmarks/kopf_operator.py --namespace {namespace} --standalone"
OKT_RUN = (
    "{bin}/okt run {root}/samples/memcached/main.py --namespace {namespace} --kubeconfig {kubeconfig} "
    "--max-concurrent {workers} --metrics-bind-address 0 --webhook-port 0 --log-format json"
)
OKT_READY = "caches synced, reconciling"


@dataclasses.dataclass(frozen=True)
class Contender:
    """One row of the comparison: its command line and environment, with ``{bin}``, ``{namespace}``,
    ``{kubeconfig}`` and ``{workers}`` filled in at launch."""

    key: str
    label: str
    description: str
    command: str
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ready_line: str | None = None
    """A line of its own log that says it watches (the harness also accepts its watch in the audit log, which can lag
    far behind after thousands of deletions)."""

    def launch(
        self,
        kubeconfig: pathlib.Path,
        namespace: str,
        workers: int,
        logs: pathlib.Path,
        tag: str,
        bin_dir: pathlib.Path | None = None,
        *,
        sample_cpu: bool = False,
    ) -> process.OperatorProcess:
        """This contender on ``namespace`` (with ``bin_dir``'s tools), not started yet: named by its key and ``tag``,
        its log in ``logs`` (named by the namespace and ``tag``)."""
        values = {
            "bin": str(bin_dir or pathlib.Path(sys.executable).parent),
            "root": str(ROOT),
            "namespace": namespace,
            "kubeconfig": str(kubeconfig),
            "workers": str(workers),
        }
        argv = tuple(part.format(**values) for part in self.command.split())
        if not pathlib.Path(argv[0]).exists():
            raise FileNotFoundError(
                f"{argv[0]} not found: run the harness with the project's interpreter (.venv/bin/python -m "
                "benchmarks.run), whose bin directory holds the okt and kopf commands"
            )
        pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = {"KUBECONFIG": str(kubeconfig), "PYTHONPATH": pythonpath}
        env |= {k: v.format(**values) for k, v in self.env.items()}
        log_path = logs / f"{namespace}-{tag}.log"
        return process.OperatorProcess(
            argv, name=f"{self.key}-{tag}", env=env, log_path=log_path, cwd=ROOT, sample_cpu=sample_cpu
        )


def okt_sample(key: str, label: str, description: str, finalizer: str, strategy: str) -> Contender:
    """The memcached sample under ``okt run``, with its switches: its finalizer (``on``/``off``) and how it writes
    children."""
    env = {"MEMCACHED_FINALIZER": finalizer, "MEMCACHED_APPLY_STRATEGY": strategy}
    return Contender(key, label, description, OKT_RUN, env, OKT_READY)


RAW = Contender(
    "raw", "raw floor", "watch + thread pool, 4 writes per object, no framework", RAW_FLOOR, ready_line="watching"
)
RAW_OKT = Contender(
    "raw-okt",
    "raw floor, okt-shaped",
    "the floor writing okt's objects: five conditions, owner label, checksum annotation",
    RAW_FLOOR + " --okt-shaped",
    ready_line="watching",
)
KOPF = Contender(
    "kopf",
    "Kopf",
    "kopf.on.create/update/resume, pykube, kopf.adopt, defaults",
    KOPF_RUN,
    {WORKERS_VARIABLE: "{workers}"},
)
OKT = okt_sample("okt", "okt", "the memcached sample, finalizer off", "off", "apply")
OKT_MERGE = okt_sample(
    "okt-merge", "okt, merge patches", "the memcached sample, finalizer off, children by merge patch", "off", "merge"
)
OKT_FINAL = okt_sample(
    "okt-final", "okt + finalizer", "the memcached sample, finalizer and inventory on", "on", "apply"
)

LISTER = Contender(
    "raw-list",
    "raw floor, list only",
    "the floor's client listing the CRs and their children once, then exiting",
    RAW_FLOOR + " --list-everything",
)
"""Not a contender: after the floor's restart, the harness times it from start to exit (see
:meth:`benchmarks.run.Bench.list_everything`)."""

ALL: tuple[Contender, ...] = (RAW, RAW_OKT, KOPF, OKT, OKT_MERGE, OKT_FINAL)


def by_key(key: str) -> Contender:
    for contender in ALL:
        if contender.key == key:
            return contender
    raise KeyError(f"unknown contender {key!r}; known: {', '.join(c.key for c in ALL)}")
