"""The metrics observer: a scripted event sequence scraped exactly, seeding, spend, exposition."""

from __future__ import annotations

import json
from pathlib import Path

import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.exposition import generate_latest

from overbrainer.events.bus import open_event_bus
from overbrainer.events.types import (
    PIPELINE_STAGES,
    ConcurrencyChanged,
    ItemDone,
    ItemFailed,
    JobStatusChanged,
    MarkEvent,
    Metric,
    PodStatusChanged,
    Push,
    RunWatched,
    Stage,
    StageFinished,
    StageModel,
    StageStarted,
    StageStats,
    System,
)
from overbrainer.metrics.families import FAMILIES
from overbrainer.metrics.observer import MetricsObserver
from overbrainer.metrics.spend import pod_spends
from overbrainer.model.job_status import Exited, Running
from overbrainer.model.pod_status import PodCreating
from overbrainer.model.system_sample import Cpu, Disk, Gpu, Memory, SystemSample
from overbrainer.model.train_metric import EvalMark, JobStage, StageMark, TrainMetric
from overbrainer.model.usage import Usage
from overbrainer.project.directory import Project
from overbrainer.storage.history import HistoryRecord, HistoryStatus, append_history
from tests.scrape import Scrape, Series, families, samples


def scrape(observer: MetricsObserver) -> Scrape:
    """Every sample of the exposition, parsed back: sample name → labels → value."""
    return samples(observer.encode().decode())


def series(*rows: tuple[dict[str, str], float]) -> Series:
    return {tuple(labels.items()): value for labels, value in rows}


def running(subtopics: int = 0, questions: int = 0, answers: int = 0, split: int = 0) -> Series:
    return series(
        ({"stage": "subtopics"}, subtopics),
        ({"stage": "questions"}, questions),
        ({"stage": "answers"}, answers),
        ({"stage": "split"}, split),
    )


BUILD = series(({"version": "0.1.0"}, 1))

RUN_DISK = Disk("/work", "ext4", False, 100 * 2**30, 40 * 2**30, 60 * 2**30)
ROOT_DISK = Disk("/", "overlay", False, 50 * 2**30, 10 * 2**30, 40 * 2**30)
SHARED_DISK = Disk("/workspace", "fuse.mfs", True, 2**50, 2**49, 2**49)
GPU0 = Gpu(0, "NVIDIA A100-SXM4-80GB", 0.87, 40 * 2**30, 80 * 2**30, 64.0, 312.45, 400.0)
GPU1 = Gpu(1, "NVIDIA A100-SXM4-80GB", 0.5, 2**30, 80 * 2**30, None, 100.0, 400.0)
FIRST = SystemSample(
    at=1700000000.5,
    disks=(RUN_DISK, SHARED_DISK, ROOT_DISK),
    cpu=Cpu(usage=None, load1=2.5, cpus=8.0, container=True),
    memory=Memory(31 * 2**30, 64 * 2**30),
    gpus=(GPU0, GPU1),
)
SECOND = SystemSample(
    at=1700000010.5,
    disks=(RUN_DISK,),
    cpu=Cpu(usage=0.25, load1=3.0, cpus=8.0, container=True),
    memory=Memory(32 * 2**30, 64 * 2**30),
    gpus=(GPU0,),
)


def gpu_series(run: str, gpu: Gpu) -> Scrape:
    labels = {"run_id": run, "gpu": str(gpu.index)}
    figures = {
        "overbrainer_gpu_utilization_ratio": gpu.utilization,
        "overbrainer_gpu_memory_used_bytes": gpu.memory_used_bytes,
        "overbrainer_gpu_memory_total_bytes": gpu.memory_total_bytes,
        "overbrainer_gpu_temperature_celsius": gpu.temperature_celsius,
        "overbrainer_gpu_power_watts": gpu.power_watts,
        "overbrainer_gpu_power_limit_watts": gpu.power_limit_watts,
    }
    found: Scrape = {
        name: series((labels, value)) for name, value in figures.items() if value is not None
    }
    found["overbrainer_gpu_info"] = series(({**labels, "name": gpu.name}, 1))
    return found


def merged(*scrapes: Scrape) -> Scrape:
    result: Scrape = {}
    for one in scrapes:
        for name, rows in one.items():
            result.setdefault(name, {}).update(rows)
    return result


PIPELINE_TOTALS: Scrape = {
    "overbrainer_stage_items_total": series(
        ({"stage": "subtopics", "result": "done"}, 1),
        ({"stage": "subtopics", "result": "skipped"}, 1),
        ({"stage": "answers", "result": "done"}, 1),
        ({"stage": "answers", "result": "excluded"}, 1),
        ({"stage": "answers", "result": "failed"}, 1),
        ({"stage": "questions", "result": "done"}, 1),
        ({"stage": "split", "result": "excluded"}, 2),
    ),
    "overbrainer_tokens_total": series(
        ({"stage": "subtopics", "model": "gen-model", "direction": "in"}, 100),
        ({"stage": "subtopics", "model": "gen-model", "direction": "out"}, 50),
        ({"stage": "answers", "model": "parent", "direction": "in"}, 600),
        ({"stage": "answers", "model": "parent", "direction": "out"}, 310),
        ({"stage": "questions", "model": "unknown", "direction": "in"}, 7),
        ({"stage": "questions", "model": "unknown", "direction": "out"}, 3),
    ),
    # The answer without a price adds no cost; the excluded one with a price does.
    "overbrainer_cost_usd_total": series(
        ({"stage": "subtopics", "model": "gen-model"}, 0.25),
        ({"stage": "answers", "model": "parent"}, 0.125),
    ),
    "overbrainer_item_retries_total": series(({"stage": "answers"}, 2)),
    "overbrainer_concurrency_limit": series(({"model": "stub/parent"}, 6)),
}


async def test_a_scripted_sequence_scrapes_to_exact_values() -> None:
    observer = MetricsObserver()
    with trio.fail_after(5):
        async with open_event_bus(observer=observer) as pipeline:
            pipeline.publish(StageStarted(Stage.SUBTOPICS, 2))
            pipeline.publish(StageModel(Stage.SUBTOPICS, "gen-model"))
            pipeline.publish(ItemDone(Stage.SUBTOPICS, "Physics", Usage(100, 50), 0.25))
            pipeline.publish(ItemDone(Stage.SUBTOPICS, "Chemistry"))
            pipeline.publish(StageFinished(Stage.SUBTOPICS, StageStats(done=1, skipped=1)))
            pipeline.publish(StageStarted(Stage.ANSWERS, 3))
            pipeline.publish(StageModel(Stage.ANSWERS, "parent"))
            pipeline.publish(ItemFailed(Stage.ANSWERS, "q1", "timed out", retryable=True))
            pipeline.publish(ConcurrencyChanged("stub/parent", 8, 6, "rate limited"))
            pipeline.publish(ItemFailed(Stage.ANSWERS, "q1", "timed out", retryable=True))
            pipeline.publish(ItemDone(Stage.ANSWERS, "q1", Usage(400, 300)))
            pipeline.publish(ItemDone(Stage.ANSWERS, "q2", Usage(200, 10), 0.125, excluded=True))
            pipeline.publish(ItemFailed(Stage.ANSWERS, "q3", "refused", retryable=False))
            async with open_event_bus(observer=observer) as other:
                # No StageModel on this bus: its tokens go to the `unknown` model.
                other.publish(StageStarted(Stage.QUESTIONS, 1))
                other.publish(ItemDone(Stage.QUESTIONS, "s1", Usage(7, 3)))
                other.publish(StageFinished(Stage.QUESTIONS, StageStats(done=1)))
                other.publish(StageStarted(Stage.SPLIT, 6))
                other.publish(StageFinished(Stage.SPLIT, StageStats(done=4, excluded=2)))
                assert scrape(observer) == merged(
                    PIPELINE_TOTALS,
                    {
                        "overbrainer_stage_running": running(answers=1),
                        "overbrainer_build_info": BUILD,
                    },
                )
        # The answers stage never finished: closing its bus stops it running.
        assert scrape(observer) == merged(
            PIPELINE_TOTALS,
            {"overbrainer_stage_running": running(), "overbrainer_build_info": BUILD},
        )


async def test_a_watched_run_sets_train_phase_and_system_series() -> None:
    observer = MetricsObserver()
    idle: Scrape = {"overbrainer_stage_running": running(), "overbrainer_build_info": BUILD}
    with trio.fail_after(5):
        async with open_event_bus(observer=observer) as bus:
            # Before any RunWatched: no series.
            bus.publish(Metric(TrainMetric(time=1.0, step=1, loss=9.0)))
            bus.publish(System(FIRST))
            bus.publish(PodStatusChanged(PodCreating("overbrainer-r-1", "A100")))
            bus.publish(Push("run-1", 10, 100))
            assert scrape(observer) == idle

            bus.publish(RunWatched("run-1"))
            bus.publish(MarkEvent(StageMark(JobStage.TRAIN)))
            bus.publish(JobStatusChanged(Running()))
            metric = TrainMetric(time=2.0, step=5, max_steps=10, loss=1.5, learning_rate=0.0002)
            bus.publish(Metric(metric))
            bus.publish(MarkEvent(EvalMark(3, 8)))
            bus.publish(System(FIRST))
            train: Scrape = {
                "overbrainer_train_step": series(({"run_id": "run-1"}, 5)),
                "overbrainer_train_max_steps": series(({"run_id": "run-1"}, 10)),
                "overbrainer_train_loss": series(({"run_id": "run-1"}, 1.5)),
                "overbrainer_learning_rate": series(({"run_id": "run-1"}, 0.0002)),
            }

            def phase(run: str, current: str) -> Scrape:
                names = [
                    "training",
                    "evaluating",
                    "finalizing",
                    "merging",
                    "exporting",
                    "comparing",
                    "retrieving",
                ]
                rows = [({"run_id": run, "phase": n}, int(n == current)) for n in names]
                return {"overbrainer_train_phase": series(*rows)}

            run1 = {"run_id": "run-1"}
            first_system: Scrape = {
                # The shared (network) disk is left out.
                "overbrainer_target_disk_used_bytes": series(
                    ({**run1, "mount": "/work"}, 40 * 2**30), ({**run1, "mount": "/"}, 10 * 2**30)
                ),
                "overbrainer_target_disk_size_bytes": series(
                    ({**run1, "mount": "/work"}, 100 * 2**30), ({**run1, "mount": "/"}, 50 * 2**30)
                ),
                "overbrainer_target_cpu_load1": series((run1, 2.5)),
                "overbrainer_target_cpus": series((run1, 8)),
                "overbrainer_target_memory_used_bytes": series((run1, 31 * 2**30)),
                "overbrainer_target_memory_limit_bytes": series((run1, 64 * 2**30)),
                "overbrainer_target_sample_timestamp_seconds": series((run1, 1700000000.5)),
            }
            assert scrape(observer) == merged(
                idle,
                train,
                phase("run-1", "evaluating"),
                first_system,
                gpu_series("run-1", GPU0),
                gpu_series("run-1", GPU1),
            )

            # GPU 1 disappears and `/` is no longer reported: their series go.
            bus.publish(System(SECOND))
            second_system: Scrape = {
                "overbrainer_target_disk_used_bytes": series(
                    ({**run1, "mount": "/work"}, 40 * 2**30)
                ),
                "overbrainer_target_disk_size_bytes": series(
                    ({**run1, "mount": "/work"}, 100 * 2**30)
                ),
                "overbrainer_target_cpu_usage_ratio": series((run1, 0.25)),
                "overbrainer_target_cpu_load1": series((run1, 3.0)),
                "overbrainer_target_cpus": series((run1, 8)),
                "overbrainer_target_memory_used_bytes": series((run1, 32 * 2**30)),
                "overbrainer_target_memory_limit_bytes": series((run1, 64 * 2**30)),
                "overbrainer_target_sample_timestamp_seconds": series((run1, 1700000010.5)),
            }
            assert scrape(observer) == merged(
                idle, train, phase("run-1", "evaluating"), second_system, gpu_series("run-1", GPU0)
            )

            # The job ended: retrieving.
            bus.publish(JobStatusChanged(Exited(0)))
            assert scrape(observer) == merged(
                idle, train, phase("run-1", "retrieving"), second_system, gpu_series("run-1", GPU0)
            )

            # Watching another run drops run-1's phase and system series, keeps its last step.
            bus.publish(RunWatched("run-2"))
            assert scrape(observer) == merged(idle, train)
            bus.publish(MarkEvent(StageMark(JobStage.MERGE)))
            assert scrape(observer) == merged(idle, train, phase("run-2", "merging"))
            bus.publish(System(SECOND))
        # Closing the bus drops run-2's phase and system series; the train gauges stay.
        assert scrape(observer) == merged(idle, train)


async def test_closing_an_unknown_bus_or_twice_changes_nothing() -> None:
    observer = MetricsObserver()
    observer.event(7, StageStarted(Stage.ANSWERS, 1))
    observer.closed(7)
    observer.closed(7)
    observer.closed(99)
    assert scrape(observer)["overbrainer_stage_running"] == running()


def record(stage: Stage, model: str | None, **counts: int | float | None) -> HistoryRecord:
    return HistoryRecord(
        stage=stage,
        started_at="2026-01-01T00:00:00Z",
        ended_at="2026-01-01T00:01:00Z",
        status=HistoryStatus.OK,
        provider="p" if model else None,
        model=model,
        **counts,  # type: ignore[arg-type]
    )


def test_seeding_from_the_history_file_leaves_retries_out(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.state.mkdir()
    for entry in (
        record(Stage.SUBTOPICS, "gen", done=3, input_tokens=30, output_tokens=40, cost=0.5),
        record(Stage.ANSWERS, "parent", done=5, failed=1, excluded=2, input_tokens=9),
        record(Stage.ANSWERS, "parent", skipped=4, output_tokens=1, cost=0.25),
        record(Stage.SPLIT, None, done=7, excluded=1),
        # A stage with a model and no tokens still shows its token series at 0.
        record(Stage.QUESTIONS, "gen"),
        # compare's judging is seeded under its own stage.
        record(Stage.JUDGE, "judge", done=2, input_tokens=5, output_tokens=6, cost=0.125),
    ):
        assert append_history(project.history, entry)
    with project.history.open("a") as history:
        history.write("not json\n")

    observer = MetricsObserver.for_project(project)
    observer.event(1, ItemFailed(Stage.ANSWERS, "q", "timed out", retryable=True))
    seeded = scrape(observer)
    assert seeded["overbrainer_stage_items_total"] == series(
        ({"stage": "subtopics", "result": "done"}, 3),
        ({"stage": "answers", "result": "done"}, 5),
        ({"stage": "answers", "result": "failed"}, 1),
        ({"stage": "answers", "result": "excluded"}, 2),
        ({"stage": "answers", "result": "skipped"}, 4),
        ({"stage": "split", "result": "done"}, 7),
        ({"stage": "split", "result": "excluded"}, 1),
        ({"stage": "judge", "result": "done"}, 2),
    )
    assert seeded["overbrainer_tokens_total"] == series(
        ({"stage": "subtopics", "model": "gen", "direction": "in"}, 30),
        ({"stage": "subtopics", "model": "gen", "direction": "out"}, 40),
        ({"stage": "answers", "model": "parent", "direction": "in"}, 9),
        ({"stage": "answers", "model": "parent", "direction": "out"}, 1),
        ({"stage": "questions", "model": "gen", "direction": "in"}, 0),
        ({"stage": "questions", "model": "gen", "direction": "out"}, 0),
        ({"stage": "judge", "model": "judge", "direction": "in"}, 5),
        ({"stage": "judge", "model": "judge", "direction": "out"}, 6),
    )
    assert seeded["overbrainer_cost_usd_total"] == series(
        ({"stage": "subtopics", "model": "gen"}, 0.5),
        ({"stage": "answers", "model": "parent"}, 0.25),
        ({"stage": "judge", "model": "judge"}, 0.125),
    )
    # Only this process's retry: the history holds none.
    assert seeded["overbrainer_item_retries_total"] == series(({"stage": "answers"}, 1))
    # Live events add to the seeded counts.
    observer.event(1, ItemDone(Stage.ANSWERS, "q9", Usage(1, 2)))
    assert (
        scrape(observer)["overbrainer_stage_items_total"][
            (("stage", "answers"), ("result", "done"))
        ]
        == 6
    )


def test_exposition_lines_are_prometheus_clients_openmetrics_text() -> None:
    observer = MetricsObserver()
    observer.event(1, StageStarted(Stage.SUBTOPICS, 1))
    observer.event(1, StageStarted(Stage.ANSWERS, 1))
    observer.event(1, StageModel(Stage.ANSWERS, "parent"))
    observer.event(1, ItemDone(Stage.ANSWERS, "q", Usage(400, 20), 0.5))
    text = observer.encode().decode()
    lines = text.splitlines()
    assert 'overbrainer_stage_running{stage="subtopics"} 1.0' in lines
    assert 'overbrainer_tokens_total{direction="in",model="parent",stage="answers"} 400.0' in lines
    assert 'overbrainer_cost_usd_total{model="parent",stage="answers"} 0.5' in lines
    assert "# HELP overbrainer_stage_items Items of the pipeline stages, by result" in lines
    assert "# TYPE overbrainer_stage_items counter" in lines
    assert "# TYPE overbrainer_stage_running gauge" in lines
    assert 'overbrainer_build_info{version="0.1.0"} 1.0' in lines
    assert text.endswith("\n# EOF\n")
    assert observer.encode() == generate_latest(observer.registry)  # type: ignore[no-untyped-call]


def test_every_family_of_the_reference_is_exposed_with_its_type_and_labels() -> None:
    expected = {
        "overbrainer_stage_items": ("counter", ("stage", "result")),
        "overbrainer_tokens": ("counter", ("stage", "model", "direction")),
        "overbrainer_cost_usd": ("counter", ("stage", "model")),
        "overbrainer_stage_running": ("gauge", ("stage",)),
        "overbrainer_item_retries": ("counter", ("stage",)),
        "overbrainer_concurrency_limit": ("gauge", ("model",)),
        "overbrainer_train_step": ("gauge", ("run_id",)),
        "overbrainer_train_max_steps": ("gauge", ("run_id",)),
        "overbrainer_train_phase": ("gauge", ("run_id", "phase")),
        "overbrainer_train_loss": ("gauge", ("run_id",)),
        "overbrainer_eval_loss": ("gauge", ("run_id",)),
        "overbrainer_learning_rate": ("gauge", ("run_id",)),
        "overbrainer_runpod_spend_usd": ("gauge", ("run_id",)),
        "overbrainer_target_disk_used_bytes": ("gauge", ("run_id", "mount")),
        "overbrainer_target_disk_size_bytes": ("gauge", ("run_id", "mount")),
        "overbrainer_target_cpu_usage_ratio": ("gauge", ("run_id",)),
        "overbrainer_target_cpu_load1": ("gauge", ("run_id",)),
        "overbrainer_target_cpus": ("gauge", ("run_id",)),
        "overbrainer_target_memory_used_bytes": ("gauge", ("run_id",)),
        "overbrainer_target_memory_limit_bytes": ("gauge", ("run_id",)),
        "overbrainer_target_sample_timestamp_seconds": ("gauge", ("run_id",)),
        "overbrainer_gpu_utilization_ratio": ("gauge", ("run_id", "gpu")),
        "overbrainer_gpu_memory_used_bytes": ("gauge", ("run_id", "gpu")),
        "overbrainer_gpu_memory_total_bytes": ("gauge", ("run_id", "gpu")),
        "overbrainer_gpu_temperature_celsius": ("gauge", ("run_id", "gpu")),
        "overbrainer_gpu_power_watts": ("gauge", ("run_id", "gpu")),
        "overbrainer_gpu_power_limit_watts": ("gauge", ("run_id", "gpu")),
        "overbrainer_gpu_info": ("gauge", ("run_id", "gpu", "name")),
        "overbrainer_build_info": ("gauge", ("version",)),
    }
    assert {spec.name: (spec.kind, spec.labels) for spec in FAMILIES} == expected
    text = MetricsObserver().encode().decode()
    exposed = {f.name: f.type for f in families(text)}
    assert exposed == {name: kind for name, (kind, _) in expected.items()}


def test_label_values_are_escaped() -> None:
    observer = MetricsObserver()
    observer.event(1, StageModel(Stage.ANSWERS, 'we"ird\\model\nname'))
    observer.event(1, ItemDone(Stage.ANSWERS, "q", Usage(1, 1)))
    tokens = scrape(observer)["overbrainer_tokens_total"]
    model = 'we"ird\\model\nname'
    assert tokens[(("stage", "answers"), ("model", model), ("direction", "in"))] == 1


def write_pod(runs: Path, run_id: str, **record: object) -> None:
    (runs / run_id).mkdir(parents=True)
    (runs / run_id / "pod.json").write_text(json.dumps(record))


def test_runpod_spend_is_read_from_pod_records_at_each_scrape(tmp_path: Path) -> None:
    project = Project(tmp_path)
    runs = project.runs
    write_pod(runs, "run-live", state="running", pod_id="k3x9", cost_per_hour=0.5, created_unix=0)
    write_pod(runs, "run-gone", state="deleted", pod_id="k3x8", estimated_spend=0.64)
    write_pod(runs, "run-new", state="creating", pod_id=None, cost_per_hour=0.5)
    (runs / "run-local").mkdir()
    (runs / "run-bad").mkdir()
    (runs / "run-bad" / "pod.json").write_text("{not json")
    compare = runs / "run-live" / "compares" / "cmp-1"
    compare.mkdir(parents=True)
    (compare / "pod.json").write_text(
        json.dumps({"state": "deleted", "pod_id": "k3x7", "estimated_spend": 0.1})
    )
    assert pod_spends(runs, now=7200) == [("run-gone", 0.64), ("run-live", 1.0), ("cmp-1", 0.1)]

    observer = MetricsObserver.for_project(project)
    spend = scrape(observer)["overbrainer_runpod_spend_usd"]
    assert spend[(("run_id", "run-gone"),)] == 0.64
    assert set(spend) == {(("run_id", r),) for r in ("run-gone", "run-live", "cmp-1")}
    # A run removed since the last scrape leaves no series behind.
    (runs / "run-gone" / "pod.json").unlink()
    spend = scrape(observer)["overbrainer_runpod_spend_usd"]
    assert set(spend) == {(("run_id", r),) for r in ("run-live", "cmp-1")}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 3),
            st.sampled_from(["start", "finish", "close"]),
            st.sampled_from(PIPELINE_STAGES),
        ),
        max_size=40,
    )
)
def test_running_stages_never_go_negative_and_end_at_zero(
    steps: list[tuple[int, str, Stage]],
) -> None:
    observer = MetricsObserver()
    open_stages: dict[int, list[Stage]] = {}
    for bus, action, stage in steps:
        if action == "start":
            observer.event(bus, StageStarted(stage, 1))
            open_stages.setdefault(bus, []).append(stage)
        elif action == "finish":
            observer.event(bus, StageFinished(stage, StageStats()))
            if stage in open_stages.get(bus, []):
                open_stages[bus].remove(stage)
        else:
            observer.closed(bus)
            open_stages.pop(bus, None)
        expected = {
            s: sum(stages.count(s) for stages in open_stages.values()) for s in PIPELINE_STAGES
        }
        assert scrape(observer)["overbrainer_stage_running"] == running(
            *(expected[s] for s in PIPELINE_STAGES)
        )
    for bus in (1, 2, 3):
        observer.closed(bus)
    assert scrape(observer)["overbrainer_stage_running"] == running()
