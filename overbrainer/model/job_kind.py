"""Kinds of job run for a training run (export, compare, bench)."""

from __future__ import annotations

import enum


class JobKind(enum.Enum):
    """A job run for a run, kept in `runs/<run-id>/<dir>/<job-id>/`."""

    EXPORT = "export"
    COMPARE = "compare"
    BENCH = "bench"

    def dir_name(self) -> str:
        """The directory of such jobs inside a run."""
        return {JobKind.EXPORT: "exports", JobKind.COMPARE: "compares"}.get(self, "benches")

    def noun(self) -> str:
        """The job's noun, also the progress subject."""
        return self.value

    def with_article(self) -> str:
        """The noun with its indefinite article."""
        return "an export" if self is JobKind.EXPORT else f"a {self.value}"

    def retry(self, run: str) -> str:
        """How the user runs such a job again."""
        if self is JobKind.EXPORT:
            return f"export again with `overbrainer export {run}`"
        if self is JobKind.BENCH:
            return f"bench again with `overbrainer bench --run {run}`"
        return f"compare again with `overbrainer compare --run {run}`"
