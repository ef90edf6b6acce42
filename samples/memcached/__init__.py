"""The memcached sample: okt's canonical operator (see README.md). The operator itself is :mod:`.memcached_operator`."""
