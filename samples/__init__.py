"""Runnable okt operators. Each sample is a package too, so tests, the demo and the benchmarks import it."""
