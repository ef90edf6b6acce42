"""Job owned by WebApp (lifecycle.example.com/v1alpha1): the author's part.

Generated once by ``okt gen resource``, then yours. Regeneration rewrites
``job_web_app_gen.py`` only (template, API version,
hashed fields) and never touches this file.

A WebApp runs two kinds of Jobs, both from the one template: the **setup** Job ``<name>-setup`` while it is
Provisioning, and an **upgrade** Job ``<name>-upgrade-<version>`` while it is Upgrading. A Job's pod template is
immutable, so a Job is never updated (the generated base is a create-only ``okt.Resource``): a new version gets a new
Job, with the version in its name. Each Job carries the version it installs in the ``lifecycle.example.com/version``
label, which is how the operator learns what a finished setup Job installed.

Whether a Job finished is read from its conditions (``Complete`` or ``Failed`` with status True), as the Job
controller reports it; counters like ``status.failed`` alone do not mean the Job gave up (``backoffLimit`` may allow
another Pod).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import okt

from .job_web_app_gen import JobWebAppBase

SETUP = "setup"
UPGRADE = "upgrade"
VERSION_LABEL = "lifecycle.example.com/version"


class JobState(enum.Enum):
    """Where a Job stands, as far as the lifecycle cares."""

    MISSING = "missing"
    ACTIVE = "active"
    SUCCEEDED = "succeeded"
    FAILED = "failed"

    @classmethod
    def of(cls, live: Mapping[str, Any] | None) -> JobState:
        """The state of a live Job (``None``: it does not exist)."""
        if live is None:
            return cls.MISSING
        for condition in (live.get("status") or {}).get("conditions") or []:
            if condition.get("status") != "True":
                continue
            if condition.get("type") == "Complete":
                return cls.SUCCEEDED
            if condition.get("type") == "Failed":
                return cls.FAILED
        return cls.ACTIVE


def setup_job_name(app: str) -> str:
    return f"{app}-{SETUP}"


def upgrade_job_name(app: str, version: str) -> str:
    return f"{app}-{UPGRADE}-{version}"


def job_version(live: Mapping[str, Any] | None) -> str | None:
    """The version a live Job installs (its ``lifecycle.example.com/version`` label)."""
    labels = ((live or {}).get("metadata") or {}).get("labels") or {}
    version = labels.get(VERSION_LABEL)
    return str(version) if version else None


class JobWebApp(JobWebAppBase):
    """A setup or upgrade Job of one WebApp, for one version. Build it with :meth:`setup` or :meth:`upgrade`."""

    @classmethod
    def setup(cls, cr: okt.CustomResource, version: str) -> JobWebApp:
        """The Job that provisions ``cr`` at ``version``."""
        return cls(cr, name=setup_job_name(cr.name), params={"task": SETUP, "version": version})

    @classmethod
    def upgrade(cls, cr: okt.CustomResource, version: str) -> JobWebApp:
        """The Job that upgrades ``cr`` to ``version``."""
        return cls(cr, name=upgrade_job_name(cr.name, version), params={"task": UPGRADE, "version": version})
