"""An invalid spec left alone: after its first report, how many writes does okt send? (Target: 0.)

``python -m benchmarks.quiet_invalid --minutes 5``: ``okt run`` (its own token user) over a refused Memcached beside a
valid one; once the refusal is reported, everything is left alone (the operator restarted halfway, a child of the
valid object edited) and the operator's writes are counted from the audit log.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
from collections.abc import Sequence

from benchmarks import cluster, contenders, report
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import audit, condition, crds, envtest, process, waiting

OPERATOR = envtest.TokenUser("quiet-operator", "quiet-" + "0" * 26, ("system:masters",))
NAMESPACE = "quiet"


def ready_reason(client: kube_client.Client, kind: kinds.Kind, name: str) -> str | None:
    ready = condition(client.get(kind, name, NAMESPACE), "Ready")
    return None if ready is None else f"{ready.get('status')}/{ready.get('reason')}"


def launch(plane: envtest.ControlPlane, logs: pathlib.Path, tag: str) -> process.OperatorProcess:
    kubeconfig = plane.kubeconfig_for(OPERATOR)
    return contenders.OKT.launch(kubeconfig, NAMESPACE, 2, logs, tag).start()


def measure(minutes: float, logs: pathlib.Path) -> dict[str, object]:
    with envtest.ControlPlane(users=(OPERATOR,), audit_log=True) as plane:
        admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
        kind = crds.ensure_crd(admin, crds.load_crd(contenders.CRD), timeout=60.0)
        cluster.create_namespace(admin, NAMESPACE)
        operator = launch(plane, logs, "first")
        # The sample's policy refuses an image with a floating tag (InvalidSpec, field spec.image).
        for name, spec in (("valid", {"size": 1}), ("invalid", {"size": 1, "image": "memcached:latest"})):
            body = {"apiVersion": kind.api_version, "kind": kind.kind, "spec": spec}
            admin.create({**body, "metadata": {"name": name, "namespace": NAMESPACE}}, kind)
        waiting.wait_for(lambda: ready_reason(admin, kind, "invalid") == "False/InvalidSpec", timeout=120)
        waiting.wait_for(lambda: (ready_reason(admin, kind, "valid") or "").startswith("True"), timeout=120)
        time.sleep(audit.FLUSH_LAG * 2)
        reported_at = time.time()
        deadline = reported_at + minutes * 60
        half = reported_at + minutes * 30
        restarted = edited = False
        while time.time() < deadline:
            if not restarted and time.time() >= half:
                operator.stop()
                operator = launch(plane, logs, "restarted")
                restarted = True
            if not edited and time.time() >= reported_at + 20:
                config = kinds.CONFIG_MAP
                admin.patch(config, "valid-config", {"metadata": {"labels": {"poked": "yes"}}}, NAMESPACE)
                edited = True
            time.sleep(1)
        operator.stop()
        log = audit.AuditLog(plane.audit_log_path, [OPERATOR.name])
        log.settle()
        after = [r for r in log.requests(OPERATOR.name, start=reported_at) if r.is_write]
        return {
            "minutes": minutes,
            "operator_restarted": restarted,
            "writes_after_first_report": len(after),
            "writes_after_first_report_by_resource": sorted({f"{r.verb} {r.resource}" for r in after}),
            "invalid_still": ready_reason(admin, kind, "invalid"),
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quiet_invalid", description=__doc__)
    parser.add_argument("--minutes", type=float, default=5.0, help="how long the invalid spec is left alone")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="write the result here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="okt-quiet-") as logs:
        result = measure(args.minutes, pathlib.Path(logs))
    print(json.dumps(result, indent=2))
    if args.json is not None:
        report.write_json(args.json, result)
    return 0 if result["writes_after_first_report"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
