"""The WebApp API: its identity, and its spec and status as pydantic models (the CRD is generated from them).

A WebApp asks for one application ``version`` of an ``image``. The operator provisions it with a setup Job, runs it as
a Deployment, and moves it to a new version with an upgrade Job when ``spec.version`` changes. The status says which
version is installed and which one failed, if any; the lifecycle phase itself is okt's bookkeeping (the
``okt.io/phase`` annotation, see ``reconciler.py``).
"""

from __future__ import annotations

from typing import Any

import pydantic

GROUP = "lifecycle.example.com"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "WebApp"
PLURAL = "webapps"

VERSION_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,18}[a-z0-9])?$"
"""An image tag that can also be part of a Job name: lowercase letters, digits, ``-`` and ``.``; at most 20 long."""

IMAGE_PATTERN = r"^[a-z0-9]([-a-z0-9._/]*[a-z0-9])?$"
"""An image repository without a tag or digest (the tag is ``spec.version``)."""


class WebAppSpec(pydantic.BaseModel):
    """What the user asks for."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    version: str = pydantic.Field(
        pattern=VERSION_PATTERN,
        description="The application version to run: the image tag. Changing it upgrades a running WebApp.",
    )
    image: str = pydantic.Field(
        default="nginxinc/nginx-unprivileged",
        pattern=IMAGE_PATTERN,
        description="The image repository, without a tag (the tag is the version); its pods run as uid 101.",
    )
    replicas: int = pydantic.Field(default=1, ge=1, le=10, description="How many replicas the Deployment runs.")


class WebAppStatus(pydantic.BaseModel):
    """What the operator observed, besides okt's conditions and the lifecycle phase."""

    model_config = pydantic.ConfigDict(populate_by_name=True)

    installed_version: str | None = pydantic.Field(
        default=None, alias="installedVersion", description="The version the Deployment runs (set once provisioned)."
    )
    failed_version: str | None = pydantic.Field(
        default=None, alias="failedVersion", description="The version whose setup or upgrade Job failed, if any."
    )
    target_version: str | None = pydantic.Field(
        default=None,
        alias="targetVersion",
        description="The version the upgrade under way installs (set while Upgrading; a later spec.version waits).",
    )


PRINTER_COLUMNS: tuple[dict[str, Any], ...] = (
    {"name": "Phase", "type": "string", "jsonPath": ".metadata.annotations.okt\\.io/phase"},
    {"name": "Version", "type": "string", "jsonPath": ".spec.version"},
    {"name": "Installed", "type": "string", "jsonPath": ".status.installedVersion"},
)
"""Columns of ``kubectl get webapps`` (okt adds Ready, Reason and Age)."""
