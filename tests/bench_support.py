"""A project for `overbrainer bench`'s tests: the compare tests' run with its child GGUF, a tiny
base GGUF exported beside it, a local generate_until task (YAML + JSONL) and a stand-in `lm_eval`
that logs each call and can be held on a file before it runs the real one."""

from __future__ import annotations

import json
from pathlib import Path

from tests.compare_support import RUN_ID, add_base_export, compare_env, make_compare_project
from tests.llama_support import LlamaRelease

BENCHES = f"runs/{RUN_ID}/benches"

TASK_YAML = """\
task: tiny_qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: tiny_qa.jsonl
test_split: test
output_type: generate_until
doc_to_text: "Question: {{question}}\\nAnswer:"
doc_to_target: "{{answer}}"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: true
metadata:
  version: 1.0
"""

TASK_JSONL = """\
{"question": "What is 2 + 2?", "answer": "4"}
{"question": "What colour is a clear sky?", "answer": "blue"}
{"question": "What is the capital of France?", "answer": "Paris"}
{"question": "How many legs has a cat?", "answer": "4"}
{"question": "What is the opposite of hot?", "answer": "cold"}
"""

WRAPPER = """\
#!/bin/sh
# The stand-in lm_eval: log the call, wait while {hold} exists for the base model, run the real one.
printf '%s\\n' "$*" >> {calls}
# Over SSH the job does not inherit the test's environment: the data set is local, read offline.
export HF_DATASETS_OFFLINE=1 HF_HOME={hf_home}
case "$*" in
    *model=base,*)
        if [ -f {hold} ]; then
            : > {held}
            while [ -f {hold} ]; do sleep 0.05; done
        fi ;;
esac
exec {real} "$@"
"""


def offline_env(release: LlamaRelease, tmp: Path) -> dict[str, str]:
    """The bench's environment: the served llama.cpp release, a cache in `tmp`, and HF datasets
    offline (benchmark data sets cannot be downloaded here: the local JSONL is read)."""
    offline = {"HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp / "hf")}
    return compare_env(release, tmp / "cache", offline)


def make_bench_project(
    root: Path,
    lm_eval: str,
    *,
    base: bool = True,
    target: str = "local",
    remote_dir: Path | None = None,
) -> Path:
    """The compare project plus `[bench]`, the task files in `bench_tasks/` and (by default)
    the base model's GGUF; `target` and `remote_dir` as `make_compare_project` takes them."""
    make_compare_project(root, target=target, remote_dir=remote_dir)
    with (root / "overbrainer.toml").open("a", encoding="utf-8") as config:
        config.write(
            f'\n[bench]\ntasks = ["tiny_qa"]\nlm_eval = {json.dumps(lm_eval)}\nmax_tokens = 8\n'
        )
    tasks = root / "bench_tasks"
    tasks.mkdir()
    (tasks / "tiny_qa.yaml").write_text(TASK_YAML, encoding="utf-8")
    (tasks / "tiny_qa.jsonl").write_text(TASK_JSONL, encoding="utf-8")
    if base:
        add_base_export(root)
    return root


def write_wrapper(directory: Path, real: Path) -> Path:
    """The stand-in `lm_eval` in `directory` (its `calls.log`, `hold` and `held` files there)."""
    path = directory / "lm_eval_wrapper.sh"
    path.write_text(
        WRAPPER.format(
            calls=directory / "calls.log",
            hold=directory / "hold",
            held=directory / "held",
            real=real,
            hf_home=directory / "hf",
        ),
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path
