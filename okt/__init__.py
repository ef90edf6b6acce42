"""okt — Kubernetes operators as state machines (a Python re-think of Orange's Operators Karma Tools).

The public surface is exactly what ``__all__`` lists; everything else is internal.
"""

from okt.engines.freestyle import FreeStyle
from okt.engines.results import Operation, Outcome, OutcomeKind
from okt.engines.states import State
from okt.engines.stepper import Run, Stepper
from okt.errors import (
    AdmissionRefused,
    ApiError,
    BadRequest,
    ConfigurationError,
    Conflict,
    Forbidden,
    GiveUp,
    Gone,
    HttpError,
    ImmutableField,
    Invalid,
    InvalidChild,
    InvalidSpec,
    MutationError,
    NamespaceTerminating,
    NotFound,
    NotLeader,
    NotServed,
    ObjectTooLarge,
    OktError,
    OwnedByAnother,
    PermanentError,
    RegistrationError,
    RemoteError,
    RemoteTimeout,
    RequestTooLarge,
    ServerError,
    TemporaryError,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    WriteRefused,
)
from okt.hooks import on_cleanup, on_startup, probe
from okt.kube.client import Client
from okt.kube.kinds import Kind
from okt.kube.objects import CustomResource
from okt.kube.operand_http import HttpResponse
from okt.kube.podexec import ExecResult
from okt.lifecycle.lifecycle import Lifecycle, Progress
from okt.lifecycle.transition import IllegalTransition, Move, Transition, UnknownPhase
from okt.reconciler.admission_request import Admission
from okt.reconciler.context import Context
from okt.reconciler.core import reconcile
from okt.reconciler.daemons import DaemonContext, daemon
from okt.reconciler.indexes import Index
from okt.reconciler.reconciler import Reconciler
from okt.reconciler.timers import every
from okt.reconciler.watches import MapContext, ref_of, watch
from okt.resources.helpers import (
    DeploymentResource,
    Readiness,
    SecretResource,
    ServiceResource,
    StatefulSetResource,
)
from okt.resources.resource import MutableResource, Resource
from okt.runtime.manager import Manager
from okt.status.bookkeeping import Persistence
from okt.status.conditions import (
    AVAILABLE,
    DEGRADED,
    PROGRESSING,
    READY,
    RECONCILIATION_SUCCESS,
    Condition,
    Conditions,
    ConditionStatus,
)
from okt.status.writer import Target as StatusTarget

requeue_after = Outcome.requeue_after
"""A hook's return value: reconcile this object again after ``seconds`` (``return okt.requeue_after(60)``)."""
give_up = Outcome.give_up
"""A hook's return value: stop, and wait until the object changes (``return okt.give_up("why")``)."""

__all__ = [
    "AVAILABLE",
    "Admission",
    "AdmissionRefused",
    "ApiError",
    "BadRequest",
    "Client",
    "Condition",
    "ConditionStatus",
    "Conditions",
    "ConfigurationError",
    "Conflict",
    "Context",
    "CustomResource",
    "DEGRADED",
    "DaemonContext",
    "DeploymentResource",
    "ExecResult",
    "Forbidden",
    "FreeStyle",
    "GiveUp",
    "Gone",
    "HttpError",
    "HttpResponse",
    "IllegalTransition",
    "ImmutableField",
    "Index",
    "Invalid",
    "InvalidChild",
    "InvalidSpec",
    "Kind",
    "Lifecycle",
    "Manager",
    "MapContext",
    "Move",
    "MutableResource",
    "MutationError",
    "NamespaceTerminating",
    "NotFound",
    "NotLeader",
    "NotServed",
    "ObjectTooLarge",
    "OktError",
    "Operation",
    "Outcome",
    "OutcomeKind",
    "OwnedByAnother",
    "PROGRESSING",
    "PermanentError",
    "Persistence",
    "Progress",
    "READY",
    "RECONCILIATION_SUCCESS",
    "Readiness",
    "Reconciler",
    "RegistrationError",
    "RemoteError",
    "RemoteTimeout",
    "RequestTooLarge",
    "Resource",
    "Run",
    "SecretResource",
    "ServerError",
    "ServiceResource",
    "State",
    "StatefulSetResource",
    "StatusTarget",
    "Stepper",
    "TemporaryError",
    "TooManyRequests",
    "Transition",
    "Unauthorized",
    "Unavailable",
    "UnknownPhase",
    "WriteRefused",
    "daemon",
    "every",
    "give_up",
    "on_cleanup",
    "on_startup",
    "probe",
    "reconcile",
    "ref_of",
    "requeue_after",
    "watch",
]
