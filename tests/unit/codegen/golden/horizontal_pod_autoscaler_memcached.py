"""HorizontalPodAutoscaler owned by Memcached (cache/v1alpha1): the author's part.

Generated once by ``okt gen resource``, then yours. Regeneration rewrites
``horizontal_pod_autoscaler_memcached_gen.py`` only (template, API version,
hashed fields) and never touches this file.
"""

import okt

from .horizontal_pod_autoscaler_memcached_gen import (
    HorizontalPodAutoscalerMemcachedBase,
)


class HorizontalPodAutoscalerMemcached(HorizontalPodAutoscalerMemcachedBase):
    """The HorizontalPodAutoscaler that okt keeps in place for each Memcached."""

    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        """Edit ``self.desired`` (the rendered template) from ``cr``.

        Called on every reconcile. The default changes nothing: the rendered
        template is the desired object. What this method sets is hashed and
        compared with the live object, so derive it from ``cr`` alone.
        """
        # For example:
        # self.desired["spec"]["maxReplicas"] = cr.spec.max_replicas
