"""Which module adds each command to the group; a command's module is imported when it runs."""

from overbrainer.cli.group import cli

COMMAND_MODULES: dict[str, str] = {
    "answers": "overbrainer.cli.stage_commands",
    "bench": "overbrainer.cli.bench_command",
    "compare": "overbrainer.cli.compare_command",
    "config": "overbrainer.cli.config_command",
    "estimate": "overbrainer.cli.estimate_command",
    "export": "overbrainer.cli.export_command",
    "history": "overbrainer.cli.history_command",
    "import": "overbrainer.cli.import_command",
    "init": "overbrainer.cli.init_command",
    "migrate": "overbrainer.cli.migrate_command",
    "pod": "overbrainer.cli.pod_command",
    "push": "overbrainer.cli.push_command",
    "quality": "overbrainer.cli.stage_commands",
    "questions": "overbrainer.cli.stage_commands",
    "run": "overbrainer.cli.stage_commands",
    "runs": "overbrainer.cli.runs_command",
    "skill": "overbrainer.cli.skill_command",
    "split": "overbrainer.cli.stage_commands",
    "subtopics": "overbrainer.cli.stage_commands",
    "system": "overbrainer.cli.system_command",
    "train": "overbrainer.cli.train_command",
    "tui": "overbrainer.cli.tui_command",
}

cli.lazy_commands = COMMAND_MODULES
