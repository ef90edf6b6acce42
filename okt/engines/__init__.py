"""The reconcile engines: the Stepper state machine, the FreeStyle single hook, and the results they consolidate.

Pure logic: nothing here talks to a cluster, so every path through a reconcile can be driven from a plain test.
"""
