"""okt.testing — test your operator on a real local control plane (see :mod:`okt.testing.envtest`)."""

from okt.testing.envtest import ControlPlane, ControlPlaneError, TokenUser, control_plane
from okt.testing.waiting import WaitTimeout, wait_for

__all__ = ["ControlPlane", "ControlPlaneError", "TokenUser", "WaitTimeout", "control_plane", "wait_for"]
