"""``ember.testing``: the conformance suite every backend runs against itself, and its helpers.

Run it for an installed backend (ours or a third party's) with one command::

    python -m ember.testing --backend numpy          # any extra args go to pytest

The suite lives in :mod:`ember.testing.conformance`; expected values come from numpy in float64
or hand-computed constants, compared with tolerances by dtype (:func:`tolerance_for`).

A backend lists the tests it is known to fail in ``Backend.conformance_known_failures``, a dict
from a test-id pattern (``fnmatch`` on the pytest node id) to the reason. Those tests are
expected to fail (strict xfail: a test that starts passing is reported), and a pattern that
matches no test is an error, so the list cannot rot.

:func:`check_custom_op` checks a custom op's kernel and backward (:mod:`ember.extension`) on a backend against its
default run on numpy in float64, and that default's gradients against finite differences.
"""

from ._assert import assert_close, assert_equal, tolerance_for
from ._custom_op import check_custom_op

__all__ = ["assert_close", "assert_equal", "check_custom_op", "tolerance_for"]
