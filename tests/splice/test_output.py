"""The scale that makes what the base's layers add negligible (qwengpu/splice/output.py):
the smallest power of 2 that keeps a logit's shift under a quarter of the margin, refused
past float32's room."""

from __future__ import annotations

import pytest

from qwengpu.errors import UserError
from qwengpu.splice.output import SCALE_LIMIT, choose_scale


@pytest.mark.parametrize("bound, rms, row_norm, margin", [
    (5.46e4, 0.05, 3.0, 12.0), (1.0, 1.0, 1.0, 1.0), (3.3e8, 0.051, 10.7, 12.0)])
def test_the_smallest_power_of_two_that_keeps_the_shift_under_a_quarter(bound, rms,
                                                                       row_norm, margin):
    scale = choose_scale(bound, rms, row_norm, margin)
    assert scale & (scale - 1) == 0                      # a power of 2: exact scaling

    def shift(s):
        return row_norm * 2 * bound / (s * rms)
    assert shift(scale) <= margin / 4
    assert scale == 1 or shift(scale // 2) > margin / 4


def test_a_bound_past_float32_s_room_is_refused():
    with pytest.raises(UserError, match="would need a scale of"):
        choose_scale(1e30, 0.05, 3.0, 12.0)
    assert choose_scale(1e3, 0.05, 3.0, 12.0) <= SCALE_LIMIT
