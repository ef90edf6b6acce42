"""Benchmarks: okt vs Kopf vs the raw API floor, on a real local control plane (``python -m benchmarks.run``).

Claims turned into numbers anyone can reproduce; the method is in ``benchmarks/README.md``.
"""
