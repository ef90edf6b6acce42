"""`python -m okt` is the `okt` command."""

from okt.cli.main import main

main()
