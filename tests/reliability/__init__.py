"""The reliability suite: the memcached operator under kill -9, apiserver restarts, API faults and fuzzed specs.

Why this exists: each of okt's claims (nothing lost or duplicated, no crash, retries back off) is worth only the
experiment that tries to break it; ``page.md`` says what each scenario does and what must hold. Run it with ``make
chaos`` (``--reduced`` for ``make test``'s sizes, ``--only kill,fuzz`` to pick). Every wait is bounded, one failing
scenario does not stop the others, and no process started here outlives the run.
"""
