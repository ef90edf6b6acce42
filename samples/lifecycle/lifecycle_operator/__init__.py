"""lifecycle-operator: runs ``WebApp`` objects (lifecycle.example.com) through a lifecycle of phases.

The package is what ``main.py`` imports for ``okt run`` and what the tests import. From the API down:

* :mod:`.api` — the spec and status models (the CRD in ``deploy/crd.yaml`` is generated from them);
* :mod:`.resources` — the Job and the Deployment, generated from ``manifests/`` by ``okt gen resource`` plus the
  author's part;
* :mod:`.phases` — the lifecycle: the phases, the guards, and the one table of transitions;
* :mod:`.reconciler` — the reconciler, which advances the lifecycle and registers the children of each phase.
"""

from .api import API_VERSION, GROUP, KIND, PLURAL, VERSION, WebAppSpec, WebAppStatus
from .phases import LIFECYCLE, Phase
from .reconciler import WebAppReconciler

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "LIFECYCLE",
    "PLURAL",
    "VERSION",
    "Phase",
    "WebAppReconciler",
    "WebAppSpec",
    "WebAppStatus",
]
