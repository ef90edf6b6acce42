"""okt.runtime — what controller-runtime gives Go operators: informers, work queue, controllers, leader election,
metrics and probes, and the Manager that runs them (see ``docs/guide/running.md``)."""
