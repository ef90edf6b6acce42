"""The raw floor: the memcached job done with no framework — one watch, a thread pool, and the minimum of writes.

A framework's cost only means something next to the job's cost without one; what it writes, ``--okt-shaped`` and
``--list-everything`` are described in ``benchmarks/README.md``. A lower bound, not an operator anyone should ship.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import signal
import ssl
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import requests
import requests.adapters
import yaml

from benchmarks import manifests

USER_AGENT = "okt-bench-raw-floor"
WATCH_SECONDS = 300
RETRY_DELAY = 0.5
OWNER_LABEL = "okt.io/owner-uid"
HASH_ANNOTATION = "okt.io/okt-hash"
SETTINGS_ANNOTATION = "cache.example.com/settings-checksum"
OKT_CONDITIONS = (
    ("Available", "False", "ReplicasUnavailable", "waiting for replicas"),
    ("Progressing", "True", "RollingOut", "a rollout is under way"),
    ("Degraded", "False", "AsExpected", "no error"),
    ("ReconciliationSuccess", "True", "Reconciled", "generation {generation} reconciled"),
)
"""The conditions okt's memcached sample writes next to Ready while its pods are not available."""


class Api:
    """Just enough of the Kubernetes REST API: token auth from a kubeconfig, JSON in and out, a pooled session."""

    def __init__(self, kubeconfig: str, pool_size: int) -> None:
        with open(kubeconfig, encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        context_name = config["current-context"]
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        self.base = str(cluster["server"]).rstrip("/")
        self.session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=pool_size)
        self.session.mount("https://", adapter)
        # Loopback only: no proxy, and no CA bundle from the environment overriding the cluster's own CA.
        self.session.trust_env = False
        self.session.verify = cluster.get("certificate-authority") or True
        self.session.headers.update({"Authorization": f"Bearer {user['token']}", "User-Agent": USER_AGENT})
        if cluster.get("disable-compression"):  # as client-go reads the kubeconfig
            self.session.headers["Accept-Encoding"] = "identity"

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        response = self.session.request(
            method,
            self.base + path,
            data=None if body is None else json.dumps(body),
            headers={"Content-Type": content_type} if body is not None else None,
            timeout=30,
        )
        if response.status_code >= 400:
            raise ApiFailure(response.status_code, f"{method} {path}: {response.status_code} {response.text[:300]}")
        return response.json() if response.content else None

    def stream(self, path: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        with self.session.get(self.base + path, params=dict(params), stream=True, timeout=(10, 360)) as response:
            if response.status_code >= 400:
                raise ApiFailure(response.status_code, f"watch {path}: {response.status_code}")
            for line in response.iter_lines(chunk_size=None):
                if line:
                    yield json.loads(line)


class ApiFailure(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def collection(kind: str, namespace: str) -> str:
    paths = {
        "ConfigMap": f"/api/v1/namespaces/{namespace}/configmaps",
        "Service": f"/api/v1/namespaces/{namespace}/services",
        "Deployment": f"/apis/apps/v1/namespaces/{namespace}/deployments",
        manifests.KIND: f"/apis/{manifests.API_VERSION}/namespaces/{namespace}/{manifests.PLURAL}",
    }
    return paths[kind]


CHILD_KINDS = ("ConfigMap", "Service", "Deployment")


def list_everything(api: Api, namespace: str) -> int:
    """How many objects of the job's four kinds ``namespace`` holds, each kind read by one plain list."""
    return sum(len(api.call("GET", collection(kind, namespace))["items"]) for kind in (manifests.KIND, *CHILD_KINDS))


def okt_shape(child: dict[str, Any], owner_uid: str) -> None:
    """Add to ``child`` what okt adds to the children it creates (in place)."""
    meta = child["metadata"]
    meta.setdefault("labels", {})[OWNER_LABEL] = owner_uid
    if child["kind"] == "Deployment":
        settings = hashlib.sha256(meta["name"].encode()).hexdigest()[:16]
        child["spec"]["template"]["metadata"].setdefault("annotations", {})[SETTINGS_ANNOTATION] = settings
    digest = hashlib.sha256(json.dumps(child, sort_keys=True).encode()).hexdigest()
    meta.setdefault("annotations", {})[HASH_ANNOTATION] = digest


class Floor:
    """One namespace's memcached job: a watch feeding a bounded thread pool, one object at a time per name."""

    def __init__(self, api: Api, namespace: str, workers: int, okt_shaped: bool = False) -> None:
        self.api = api
        self.okt_shaped = okt_shaped
        self.namespace = namespace
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="floor")
        self.lock = threading.Lock()
        self.busy: set[str] = set()
        self.pending: dict[str, dict[str, Any]] = {}
        self.applied_size: dict[str, int] = {}
        self.stopping = threading.Event()

    # -- the work --------------------------------------------------------------------------------------------------

    def handle(self, cr: dict[str, Any]) -> None:
        meta, spec, status = cr["metadata"], cr.get("spec") or {}, cr.get("status") or {}
        name, generation = meta["name"], int(meta.get("generation", 1))
        if meta.get("deletionTimestamp"):
            return
        observed = status.get("observedGeneration")
        if observed == generation and manifests.is_ready(cr):
            self.applied_size.setdefault(name, int(spec["size"]))
            return
        owner = manifests.owner_reference({"apiVersion": manifests.API_VERSION, "kind": manifests.KIND, **cr})
        if observed is None:
            for child in manifests.children(name, self.namespace, spec):
                child["metadata"]["ownerReferences"] = [owner]
                if self.okt_shaped:
                    okt_shape(child, meta["uid"])
                self.create_or_patch(child)
        else:
            deployment = manifests.deployment(name, self.namespace, spec)
            self.patch(deployment["kind"], name, {"spec": deployment["spec"]})
            previous = self.applied_size.get(name)
            if previous is None or manifests.tier(previous) != manifests.tier(int(spec["size"])):
                config = manifests.config_map(name, self.namespace, spec)
                self.patch("ConfigMap", config["metadata"]["name"], {"data": config["data"]})
        conditions = [manifests.ready_condition(generation, manifests.find_condition(status, "Ready"))]
        wanted: dict[str, Any] = {"observedGeneration": generation, "conditions": conditions}
        if self.okt_shaped:
            wanted["availableReplicas"] = 0
            for kind, state, reason, message in OKT_CONDITIONS:
                conditions.append(
                    {
                        "type": kind,
                        "status": state,
                        "reason": reason,
                        "message": message.format(generation=generation),
                        "lastTransitionTime": conditions[0]["lastTransitionTime"],
                        "observedGeneration": generation,
                    }
                )
        self.api.call(
            "PATCH",
            f"{collection(manifests.KIND, self.namespace)}/{name}/status",
            {"status": wanted},
            "application/merge-patch+json",
        )
        self.applied_size[name] = int(spec["size"])

    def create_or_patch(self, child: dict[str, Any]) -> None:
        try:
            self.api.call("POST", collection(child["kind"], self.namespace), child)
        except ApiFailure as exc:
            if exc.code != 409:
                raise
            body = {k: v for k, v in child.items() if k not in ("apiVersion", "kind")}
            self.patch(child["kind"], child["metadata"]["name"], body)

    def patch(self, kind: str, name: str, body: Mapping[str, Any]) -> None:
        self.api.call(
            "PATCH", f"{collection(kind, self.namespace)}/{name}", body, "application/strategic-merge-patch+json"
        )

    # -- one worker per name at a time -----------------------------------------------------------------------------

    def dispatch(self, cr: dict[str, Any]) -> None:
        name = cr["metadata"]["name"]
        with self.lock:
            if name in self.busy:
                self.pending[name] = cr
                return
            self.busy.add(name)
        self.pool.submit(self.work, cr)

    def work(self, cr: dict[str, Any]) -> None:
        name = cr["metadata"]["name"]
        try:
            self.handle(cr)
        except (ApiFailure, requests.RequestException) as exc:
            print(f"raw-floor: {name}: {exc}", file=sys.stderr, flush=True)
            if not self.stopping.is_set():
                time.sleep(RETRY_DELAY)
                with self.lock:
                    self.pending.setdefault(name, cr)
        with self.lock:
            following = self.pending.pop(name, None)
            if following is None or self.stopping.is_set():
                self.busy.discard(name)
                return
        self.pool.submit(self.work, following)

    # -- list + watch ----------------------------------------------------------------------------------------------

    def run(self) -> None:
        path = collection(manifests.KIND, self.namespace)
        resource_version = ""
        while not self.stopping.is_set():
            try:
                if not resource_version:
                    listing = self.api.call("GET", path)
                    for item in listing.get("items") or []:
                        self.dispatch(item)
                    resource_version = str(listing["metadata"]["resourceVersion"])
                params = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": WATCH_SECONDS}
                for event in self.api.stream(path, params):
                    if self.stopping.is_set():
                        return
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        resource_version = "" if obj.get("code") == 410 else resource_version
                        break
                    resource_version = str((obj.get("metadata") or {}).get("resourceVersion") or resource_version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.dispatch(obj)
            except (ApiFailure, requests.RequestException, ssl.SSLError, ValueError) as exc:
                if self.stopping.is_set():
                    return
                print(f"raw-floor: watch: {exc}", file=sys.stderr, flush=True)
                if isinstance(exc, ApiFailure) and exc.code == 410:
                    resource_version = ""
                time.sleep(RETRY_DELAY)

    def stop(self) -> None:
        self.stopping.set()
        self.pool.shutdown(wait=True, cancel_futures=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.raw_floor", description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--okt-shaped", action="store_true", help="write the objects okt writes (see above).")
    parser.add_argument("--list-everything", action="store_true", help="list all four kinds once and exit.")
    args = parser.parse_args(argv)
    if args.list_everything:
        print(f"raw-floor: listed {list_everything(Api(args.kubeconfig, pool_size=1), args.namespace)}", flush=True)
        return 0
    floor = Floor(Api(args.kubeconfig, pool_size=args.workers + 2), args.namespace, args.workers, args.okt_shaped)

    def on_signal(signum: int, frame: object) -> None:
        floor.stopping.set()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"raw-floor: watching {manifests.PLURAL} in {args.namespace} with {args.workers} workers", flush=True)
    try:
        floor.run()
    finally:
        floor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
