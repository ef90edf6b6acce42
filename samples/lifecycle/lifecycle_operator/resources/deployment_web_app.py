"""Deployment owned by WebApp (lifecycle.example.com/v1alpha1): the author's part.

Generated once by ``okt gen resource``, then yours. Regeneration rewrites
``deployment_web_app_gen.py`` only (template, API version,
hashed fields) and never touches this file.

The Deployment runs the version the lifecycle *installed* (``status.installedVersion``), not the one the spec asks
for: while an upgrade Job runs, the application keeps serving the old version, and it moves to the new one only when
the lifecycle enters Running again. The template takes everything else from the spec, so there is nothing to mutate.
"""

from __future__ import annotations

import okt

from .deployment_web_app_gen import DeploymentWebAppBase


class DeploymentWebApp(DeploymentWebAppBase):
    """The Deployment that okt keeps in place for each provisioned WebApp."""

    @classmethod
    def at(cls, cr: okt.CustomResource, version: str) -> DeploymentWebApp:
        """The Deployment of ``cr`` running ``version``."""
        return cls(cr, params={"version": version})
