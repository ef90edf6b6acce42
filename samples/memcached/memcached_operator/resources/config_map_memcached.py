"""ConfigMap owned by Memcached (cache/v1alpha1): the author's part.

Generated once by ``okt gen resource``, then yours: regeneration rewrites
``config_map_memcached_gen.py`` (template, API version, hashed fields) and never
touches this file.

The ``<name>-config`` ConfigMap holds the memcached settings of the cluster
(see ``memcached_operator.settings``); the pods read them as environment variables.
"""

from typing import Any

import okt

from .. import api, settings
from .config_map_memcached_gen import ConfigMapMemcachedBase

SUFFIX = "-config"


def config_name(cr_name: str) -> str:
    """The settings ConfigMap's name for the Memcached named ``cr_name``."""
    return f"{cr_name}{SUFFIX}"


class ConfigMapMemcached(ConfigMapMemcachedBase):
    """The ``<name>-config`` ConfigMap that okt keeps in place for each Memcached."""

    def __init__(self, cr: okt.CustomResource | None = None, *, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(cr, name=name or (config_name(cr.name) if cr is not None else None), **kwargs)

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        """Replace the template's settings with those of the cluster's size."""
        self.desired["data"] = settings.for_size(api.spec_of(cr.spec).size).to_config_data()
