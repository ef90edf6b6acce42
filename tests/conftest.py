"""Settings shared by every test under ``tests/``.

Hypothesis' per-example deadline is a timing assertion: on a machine whose two cores are busy with a control plane
(the integration tests run beside the unit tests in CI), one example can take ten times its usual time. Speed is
measured in the benchmarks, so the property tests here check properties only.
"""

from __future__ import annotations

import hypothesis

hypothesis.settings.register_profile("okt", deadline=None)
hypothesis.settings.load_profile("okt")
