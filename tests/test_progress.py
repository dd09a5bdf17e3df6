"""Pure formatting of the progress lines, pinned with the reference's literal examples."""

from overbrainer.model.pod_status import duration_words
from overbrainer.model.train_metric import TrainMetric
from overbrainer.ui.progress import Progress, metric_line, rust_exp, size_words


def tenths(total: int) -> list[int]:
    p = Progress(total=total)
    return [c for _ in range(total + 2) if (c := p.advance()) is not None]


def test_tenths() -> None:
    assert tenths(20) == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
    assert tenths(3) == [1, 2, 3]
    assert tenths(0) == []


def test_metric_throttle() -> None:
    # The spec's sequence (reference-core.md, "Metric throttle"): the reference shows
    # T, F, T, F, T, its evaluation at 6 restarting the window. Ours counts the 10 s from the
    # last training line shown (0), so 15 shows and 17 is hidden (the docstring says why).
    p = Progress()
    seq = [(0, None), (5, None), (6, 1.0), (15, None), (17, None)]
    shown = [p.show_metric(TrainMetric(time=t, step=1, eval_loss=e), t) for t, e in seq]
    assert shown == [True, False, True, True, False]


def test_the_window_runs_from_the_last_training_line_shown() -> None:
    # Clock values injected: a hidden line does not restart the window, nor does an
    # evaluation; exactly 10 s after the last training line shown, the next one shows.
    p = Progress()
    seq = [(100, None), (105, 2.0), (109.9, None), (110, None), (119.99, None), (120, None)]
    shown = [p.show_metric(TrainMetric(time=t, step=1, eval_loss=e), t) for t, e in seq]
    assert shown == [True, True, False, True, False, True]


def test_an_evaluation_does_not_hide_the_next_training_line() -> None:
    # Axolotl evaluates at step 0: the first loss right after it still shows.
    p = Progress()
    seq = [(0, 5.8), (1, None), (2, None), (3, 5.7), (11, None)]
    shown = [p.show_metric(TrainMetric(time=t, step=1, eval_loss=e), t) for t, e in seq]
    assert shown == [True, True, False, True, True]


def test_formats() -> None:
    assert rust_exp(2e-4) == "2.00e-4" and rust_exp(1.5e3) == "1.50e3"
    m = TrainMetric(time=0, step=12, max_steps=40, epoch=0.5, loss=1.23456, learning_rate=2e-4)
    assert metric_line(m) == "step 12/40 (30%), epoch 0.50, loss 1.2346, lr 2.00e-4"
    assert metric_line(TrainMetric(time=0, step=3, eval_loss=1.0)) == "step 3, eval_loss 1.0000"
    assert [duration_words(s) for s in (45, 60, 3599, 10920, 4320)] == [
        "45s",
        "1m00s",
        "59m59s",
        "3h02m",
        "1h12m",
    ]
    assert f"{size_words(412_345_678)}/{size_words(1_234_567_890)}" == "412.3 MB/1.2 GB"
