"""The CRD helpers' defaults."""

from __future__ import annotations

import inspect

from okt.testing import crds


def test_ensure_crd_waits_by_default_longer_than_a_stock_api_server_takes_to_know_a_new_owner_kind() -> None:
    """A stock API server (``KUBEBUILDER_ASSETS``) refuses a new kind as an owner until it reloads its mapping, up to
    one reload period after the CRD is served: a default no longer than that timed out now and then on a sound CRD
    (``apply_crd`` uses the default)."""
    default = inspect.signature(crds.ensure_crd).parameters["timeout"].default

    assert default == crds.DEFAULT_TIMEOUT
    assert default >= 1.5 * crds.OWNER_MAPPING_RELOAD
