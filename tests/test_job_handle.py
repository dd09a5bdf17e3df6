"""A recorded job is identified by what its machine says: a process group or a scheduler's ID."""

from __future__ import annotations

import pytest

from overbrainer.model import codec
from overbrainer.targets.executor import JobError, JobRef
from overbrainer.training.run_record import Job


def test_a_process_job_is_written_exactly_as_before() -> None:
    assert codec.encode(Job("/r/1", 42)) == {"dir": "/r/1", "pid": 42, "container": None}


def test_a_cluster_job_is_written_with_its_ref_and_read_back() -> None:
    job = Job("/shared/runs/1", None, ref="raysubmit_abc")
    written = codec.encode(job)
    assert written == {
        "dir": "/shared/runs/1",
        "pid": None,
        "container": None,
        "ref": "raysubmit_abc",
    }
    assert codec.decode(Job, written) == job


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ({"dir": "/r", "pid": None}, "or `ref` a job ID"),
        ({"dir": "/r", "pid": None, "ref": ""}, "or `ref` a job ID"),
        ({"dir": "/r", "pid": 1}, "of at least 2"),
    ],
)
def test_a_job_with_neither_a_process_nor_an_id_is_refused(
    value: dict[str, object], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        codec.decode(Job, value)


def test_a_scheduler_job_has_no_process_group() -> None:
    ref = JobRef("/shared/runs/1", None, ref="raysubmit_abc")
    with pytest.raises(JobError, match="not a process of this machine"):
        _ = ref.group
    assert JobRef("/r", 7).group == 7
