"""The lifecycle sample's entry point: ``okt run samples/lifecycle/main.py``.

``okt run`` imports this file with its directory on ``sys.path``, so the ``lifecycle_operator`` package beside it
imports as a top-level package (as it would in a container image), and runs the reconciler bound here.
"""

from lifecycle_operator import WebAppReconciler

__all__ = ["WebAppReconciler"]
