"""What an operator pays at import for features it does not use."""

from __future__ import annotations

import subprocess
import sys


def test_an_operator_without_webhooks_never_imports_cryptography() -> None:
    # Only a webhook server needs a certificate; cryptography costs every other operator ~8 MiB of RSS.
    probe = "import sys, okt, okt.cli.run, okt.runtime.manager; print('cryptography' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)

    assert completed.stdout.strip() == "False"
