"""Service owned by Memcached (cache/v1alpha1): the author's part.

Generated once by ``okt gen resource``, then yours: regeneration rewrites
``service_memcached_gen.py`` (template, API version, hashed fields) and never
touches this file.

Nothing in the Service depends on the spec: its template (port 11211, selecting
the pods of this Memcached) is the desired object as it is.
"""

import okt

from .service_memcached_gen import ServiceMemcachedBase


class ServiceMemcached(ServiceMemcachedBase):
    """The Service (port 11211) that okt keeps in place for each Memcached."""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        """Nothing to change: the rendered template is the desired Service."""
        return None
