"""The Training view's drawings, pure: gauge bars, sparklines and the loss chart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from overbrainer.ui.tui.charts import axis_label, gauge_bar, loss_chart, sparkline


def test_a_gauge_bar_fills_its_share_and_says_when_it_is_unknown() -> None:
    assert gauge_bar(0.62, 12) == "[███████░░░░░]"
    assert gauge_bar(0.0, 4) == "[░░░░]"
    assert gauge_bar(1.3, 4) == "[████]"  # over the limit: full, never wider
    assert gauge_bar(None, 12) == "[  unknown   ]"


def test_a_sparkline_scales_to_its_values_or_to_fixed_bounds() -> None:
    assert sparkline((3.0, 2.0, 1.0, 1.0), 10) == "█▄▁▁"
    assert sparkline((), 10) == ""
    assert sparkline((0.0, 0.5, 1.0, 0.9), 10, 0.0, 1.0) == "▁▄█▇"
    assert sparkline((0.1, 0.2, 0.3), 2, 0.0, 1.0) == "▂▃"  # the last `width` only
    assert sparkline((0.5, 0.5), 4) == "▁▁"  # flat: no division by zero


def test_the_loss_chart_of_four_steps_and_an_eval() -> None:
    rows = loss_chart([(1, 3.0), (2, 1.0), (3, 2.0), (4, 0.5)], [(4, 1.0)], 12, 3)
    assert rows == [
        "  3┤⠱⡀      ",
        "   │ ⠑⡄⢀⠔⠑⡄ ",
        "0.5┤  ⠘⠁  ⠈x",
        "   └1──────4",
    ]


def test_a_flat_loss_is_drawn_mid_height_with_one_label() -> None:
    assert loss_chart([(1, 2.0), (5, 2.0)], [], 12, 2) == [
        " │          ",
        "2┤⠉⠉⠉⠉⠉⠉⠉⠉⠉⠉",
        " └1────────5",
    ]
    assert loss_chart([(7, 2.0)], [], 6, 2)[-1] == " └7   "  # one step: one label


def test_nothing_to_draw_draws_nothing() -> None:
    assert loss_chart([], [], 40, 6) == []
    assert axis_label(2.50123) == "2.501"
    assert axis_label(0.012345) == "0.01235"


points = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10_000).map(float),
        st.floats(min_value=0.0, max_value=50.0, allow_nan=False),
    ),
    min_size=1,
    max_size=200,
)


@given(points, points, st.integers(min_value=20, max_value=200), st.integers(1, 30))
def test_every_chart_row_is_exactly_as_wide_as_asked(
    losses: list[tuple[float, float]], evals: list[tuple[float, float]], width: int, height: int
) -> None:
    rows = loss_chart(losses, evals, width, height)
    assert len(rows) == height + 1
    assert {len(row) for row in rows} == {width}
