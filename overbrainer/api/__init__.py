"""overbrainer's public Python API: open a project, run its stages or its whole `run` (from Trio
or plain code), follow its events, read its history and runs. See docs/api.md.

What `__all__` names is stable; everything else in overbrainer is private.
"""

from typing import TYPE_CHECKING

from overbrainer.model.face import lazy_face

if TYPE_CHECKING:
    from overbrainer.api.events import EventCallback
    from overbrainer.api.project import Project, open_project
    from overbrainer.api.results import Outcome, RunResult, StagesResult
    from overbrainer.api.sync import InsideTrio
    from overbrainer.events.types import (
        ConcurrencyChanged,
        Event,
        ItemDone,
        ItemFailed,
        JobStatusChanged,
        Judged,
        MarkEvent,
        Metric,
        PodSpend,
        PodStatusChanged,
        Push,
        RateLimitWait,
        RunWatched,
        Stage,
        StageFinished,
        StageModel,
        StageStarted,
        StageStats,
        System,
    )
    from overbrainer.hub.push_summary import PushedFile, PushSummary
    from overbrainer.model.errors import OverbrainerError, UsageError, WorkFailed
    from overbrainer.model.usage import Usage
    from overbrainer.storage import HistoryRecord, HistoryStatus, SplitCounts
    from overbrainer.training import RunRecord, RunState, TrainResult

__all__ = [
    "ConcurrencyChanged",
    "Event",
    "EventCallback",
    "HistoryRecord",
    "HistoryStatus",
    "InsideTrio",
    "ItemDone",
    "ItemFailed",
    "JobStatusChanged",
    "Judged",
    "MarkEvent",
    "Metric",
    "Outcome",
    "OverbrainerError",
    "PodSpend",
    "PodStatusChanged",
    "Project",
    "Push",
    "PushSummary",
    "PushedFile",
    "RateLimitWait",
    "RunRecord",
    "RunResult",
    "RunState",
    "RunWatched",
    "SplitCounts",
    "Stage",
    "StageFinished",
    "StageModel",
    "StageStarted",
    "StageStats",
    "StagesResult",
    "System",
    "TrainResult",
    "Usage",
    "UsageError",
    "WorkFailed",
    "open_project",
]

_EVENTS = "events.types"
_HOMES = {
    "EventCallback": "api.events",
    "Project": "api.project",
    "open_project": "api.project",
    "Outcome": "api.results",
    "RunResult": "api.results",
    "StagesResult": "api.results",
    "InsideTrio": "api.sync",
    "OverbrainerError": "model.errors",
    "UsageError": "model.errors",
    "WorkFailed": "model.errors",
    "HistoryRecord": "storage",
    "HistoryStatus": "storage",
    "SplitCounts": "storage",
    "Usage": "model.usage",
    "RunRecord": "training",
    "RunState": "training",
    "TrainResult": "training",
    "PushSummary": "hub.push_summary",
    "PushedFile": "hub.push_summary",
}

__getattr__ = lazy_face("overbrainer", {name: _HOMES.get(name, _EVENTS) for name in __all__})
