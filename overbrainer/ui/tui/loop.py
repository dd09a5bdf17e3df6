"""The Trio loop around the pure app: urwid's TrioEventLoop, effects, ticks, redraws, signals."""

from __future__ import annotations

import datetime
import logging
import os
import shlex
import signal
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import trio
import urwid

from overbrainer.config import load_settings
from overbrainer.events.bus import Observer
from overbrainer.events.frontend import Line
from overbrainer.flows.setup import CommandOptions
from overbrainer.model.errors import EXIT_INTERRUPTED, EXIT_OK, OverbrainerError
from overbrainer.pipeline.editing import Edited, record_text, replace_record
from overbrainer.project.directory import Project
from overbrainer.storage import Stamp as FileStamp
from overbrainer.storage import file_stamp, write_atomic
from overbrainer.system.sampler import LocalSampler
from overbrainer.ui.logs import LogBuffer, level_name
from overbrainer.ui.tui import app, render
from overbrainer.ui.tui.compare_view import Markup
from overbrainer.ui.tui.effects import Abandon, Cancel, Effect, Exit, ExportLogs, OpenEditor, Spawn
from overbrainer.ui.tui.look import Look, look_of, palette, working_mark
from overbrainer.ui.tui.messages import (
    ConfigChanged,
    EditorDone,
    Key,
    Msg,
    Notice,
    Rekeyed,
    Resized,
    Sampled,
    SignalMsg,
    TaskDone,
    TaskReport,
    Tick,
)
from overbrainer.ui.tui.state import State, View
from overbrainer.ui.tui.task_spec import TaskKind, TaskSpec
from overbrainer.ui.tui.tasks import TaskHandle, run_task
from overbrainer.ui.tui.typeahead import TypeAhead

log = logging.getLogger(__name__)

TICK = 0.25
REDRAW = 0.033
"""At most one redraw per 33 ms, and only when something changed."""
RELOAD_EVERY = 2.0
SAMPLE_HERE_EVERY = 5.0
"""Seconds between two samples of this machine (the system panel while no run is followed)."""
SAMPLE_LIMIT = 20.0
EDITOR_KILL_AFTER = 2.0


def text_screen(
    body: urwid.Text,
    footer: urwid.Text,
    on_key: Callable[[str | tuple[object, ...]], bool],
    screen: urwid.display.raw.Screen | None,
    look: Look,
    header: urwid.Text | None = None,
) -> tuple[urwid.TrioEventLoop, urwid.MainLoop]:
    """The one screen layout of the TUI and its wizard: text on top, a ruled footer below, on
    urwid's Trio loop (keys to `on_key`, no mouse, colours as `look` says)."""
    frame = urwid.Frame(
        urwid.Filler(body, valign="top"),
        header=header,
        footer=urwid.Pile([urwid.Divider("─"), footer]),
    )
    if screen is None:
        screen = urwid.display.raw.Screen()
    screen.set_terminal_properties(colors=look.color.colors)  # type: ignore[arg-type]
    event_loop = urwid.TrioEventLoop()
    main = urwid.MainLoop(
        urwid.AttrMap(frame, "body"),
        palette(look.color),
        screen=screen,
        event_loop=event_loop,
        unhandled_input=on_key,
        handle_mouse=False,
    )
    return event_loop, main


def editor_command(environ: Mapping[str, str]) -> list[str]:
    """`$VISUAL`, else `$EDITOR`, else `vi`, split as a shell would."""
    return shlex.split(environ.get("VISUAL") or environ.get("EDITOR") or "vi")


class Runner:
    """Applies the app's effects, feeds it messages and draws its state."""

    def __init__(
        self,
        project: Project,
        options: CommandOptions,
        logs: LogBuffer,
        view: View,
        screen: urwid.display.raw.Screen | None = None,
        *,
        auto: bool = False,
        typeahead: TypeAhead | None = None,
        metrics: Observer | None = None,
        look: Look | None = None,
    ) -> None:
        self.look = look_of(os.environ) if look is None else look
        self.auto = auto
        self.metrics = metrics
        self.typeahead = typeahead
        self.project = project
        self.options = options
        self.logs = logs
        self.state = State(view=view)
        self.handles: dict[int, TaskHandle] = {}
        self.exit = trio.Event()
        self.dirty = trio.Event()
        self.editing = False
        self.tasks: trio.Nursery | None = None
        self.header = urwid.Text("")
        self.body = urwid.Text("")
        self.footer = urwid.Text("")
        self.event_loop, self.main = text_screen(
            self.body, self.footer, self.on_key, screen, self.look, header=self.header
        )

    def on_key(self, key: str | tuple[object, ...]) -> bool:
        """urwid hands every key here: it becomes a Key message."""
        if isinstance(key, str) and not self.editing:
            cols, rows = self.main.screen.get_cols_rows()
            if (cols, rows) != (self.state.cols, self.state.rows):
                self.post(Resized(cols, rows))  # the Compare detail scrolls by its layout
            self.post(Key(key))
        return True

    def post(self, message: Msg) -> None:
        """Hand `message` to the app and apply the effects it returns."""
        self.state, effects = app.update(self.state, message)
        self.apply(effects)
        self.dirty.set()

    def apply(self, effects: list[Effect]) -> None:
        """Carry out the app's effects."""
        assert self.tasks is not None
        for effect in effects:
            if isinstance(effect, Spawn):
                handle = TaskHandle()
                self.handles[effect.task] = handle
                self.tasks.start_soon(self._run, effect)
            elif isinstance(effect, Cancel | Abandon):
                running = self.handles.get(effect.task)
                if running is not None:
                    running.detach.set()
            elif isinstance(effect, OpenEditor):
                self.tasks.start_soon(self._edit, effect.path)
            elif isinstance(effect, ExportLogs):
                self.tasks.start_soon(self._export, effect.level)
            elif isinstance(effect, Exit):
                self.exit.set()

    async def _run(self, spawn: Spawn) -> None:
        try:
            if spawn.spec.kind is TaskKind.EDIT:
                await self._edit_record(spawn.task, spawn.spec)
                return
            handle = self.handles[spawn.task]
            await run_task(spawn.task, spawn.spec, self.options, handle, self.post, self.metrics)
        finally:
            self.handles.pop(spawn.task, None)

    async def _lend(self, path: Path) -> str | None:
        """Lend the terminal to the editor on `path`: our input and SIGINT handling wait until
        it exits; why it failed, or None."""
        command = [*editor_command(os.environ), str(path)]
        self.editing = True
        self.main.screen.stop()
        try:
            done = await trio.run_process(command, check=False)
            if done.returncode != 0:
                return f"the editor exited with status {done.returncode}"
        except OSError as problem:
            return f"cannot run the editor {command[0]}: {problem.strerror}"
        finally:
            self.main.screen.start()
            self.editing = False
        return None

    async def _edit(self, name: str) -> None:
        """Edit a project file in place (overbrainer.toml)."""
        self.post(EditorDone(name, await self._lend(self.project.root / name)))

    async def _edit_record(self, task: int, spec: TaskSpec) -> None:
        """Edit one record in a temp file of its own, then store it if it is valid."""
        name, record_id = spec.record_file, spec.record_id
        error: str | None = None
        edit: Edited | None = None
        temp: Path | None = None
        try:
            text = await trio.to_thread.run_sync(record_text, self.project, name, record_id)
            temp = await trio.to_thread.run_sync(_temp_file, f"{name}-{record_id}", text)
            error = await self._lend(temp)
            if error is None:
                edited = await trio.to_thread.run_sync(temp.read_text, "utf-8")
                edit = await trio.to_thread.run_sync(
                    replace_record, self.project, name, record_id, edited
                )
        except OverbrainerError as problem:
            error = f"nothing changed: {problem.message}"
        except OSError as problem:
            error = f"nothing changed: {problem.strerror or problem}"
        finally:
            if temp is not None:
                with trio.move_on_after(EDITOR_KILL_AFTER, shield=True):
                    await trio.to_thread.run_sync(_remove_temp, temp)
        if edit is not None:
            log.info("%s", edit.line)
            if edit.new_id != edit.old_id:
                self.post(Rekeyed(name, edit.old_id, edit.new_id))
            self.post(TaskReport(task, Line(edit.line)))
        self.post(TaskDone(task, error))

    async def _export(self, level: int) -> None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.project.state / f"logs-{stamp}.log"
        window = self.logs.window(level, self.logs.capacity, 0)
        text = "".join(
            f"{datetime.datetime.fromtimestamp(line.time).isoformat(timespec='seconds')} "
            f"{level_name(line.level)} {line.target}: {line.message}\n"
            for line in window.lines
        )
        try:
            await trio.to_thread.run_sync(write_atomic, path, text)
        except OSError as error:
            self.post(Notice(f"cannot write {path}: {error.strerror}"))
            return
        rel = path.relative_to(self.project.root)
        self.post(Notice(f"{len(window.lines)} log lines written to {rel}"))

    def draw(self) -> None:
        """Put the state on the screen."""
        cols, rows = self.main.screen.get_cols_rows()
        self.header.set_text(render.header(self.state, cols))
        mark = working_mark(self.look.motion, self.state.now)
        self.footer.set_text(render.footer(self.state, mark))
        # A wrapped keys or status line takes a row from the body, not from the bottom.
        chrome = self.header.rows((cols,)) + 1 + self.footer.rows((cols,))
        lines = render.body(self.state, self.logs, cols, rows, chrome)
        markup: list[Markup] = []
        for index, line in enumerate(lines):
            if index:
                markup.append("\n")
            markup.extend(line)
        self.body.set_text(markup or "")
        self.main.draw_screen()

    async def _redraw(self) -> None:
        while True:
            await self.dirty.wait()
            self.dirty = trio.Event()
            if not self.editing:
                self.draw()
            await trio.sleep(REDRAW)

    async def _tick(self) -> None:
        while True:
            await trio.sleep(TICK)
            self.post(Tick(trio.current_time()))

    async def _sample_here(self) -> None:
        sampler = LocalSampler(self.project.root)
        while True:
            sample = None
            with trio.move_on_after(SAMPLE_LIMIT):  # a hung mount: the sampler skips until back
                try:
                    sample = await sampler.sample()
                except Exception as error:  # psutil, NVML: a failed sample is skipped
                    log.debug("cannot sample this machine: %s", error)
            if sample is not None:
                self.post(Sampled(sample))
            await trio.sleep(SAMPLE_HERE_EVERY)

    async def _signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async for signum in signals:
                if not (self.editing and signum == signal.SIGINT):
                    self.post(SignalMsg(signum))

    async def _watch_config(self) -> None:
        files = (self.project.config, self.project.env_file)

        def stamp() -> list[FileStamp | None]:
            return [file_stamp(path) for path in files]

        stamps = await trio.to_thread.run_sync(stamp)
        while True:
            await trio.sleep(RELOAD_EVERY)
            now = await trio.to_thread.run_sync(stamp)
            if now == stamps:
                continue
            stamps = now
            self.post(
                ConfigChanged(await trio.to_thread.run_sync(_config_problem, self.project.root))
            )

    async def run(self) -> int:
        """Run until the app exits (its exit code); every task started here has ended by then."""
        early = self.typeahead.take() if self.typeahead is not None else []
        async with trio.open_nursery() as ui:
            with self.main.start():
                ui.start_soon(self.event_loop.run_async)
                async with trio.open_nursery() as tasks:
                    self.tasks = tasks
                    tasks.start_soon(self._signals)
                    tasks.start_soon(self._redraw)
                    tasks.start_soon(self._tick)
                    tasks.start_soon(self._watch_config)
                    for warning in self.look.warnings:
                        log.warning("%s", warning)
                    tasks.start_soon(self._sample_here)
                    state, effects = app.start(self.state, auto=self.auto)
                    self.state = state
                    self.apply(effects)
                    self.main.process_input(early)  # keys typed while the TUI started
                    await self.exit.wait()
                    tasks.cancel_scope.cancel()
                ui.cancel_scope.cancel()
        return EXIT_INTERRUPTED if self.state.signalled else EXIT_OK


def _temp_file(name: str, text: str) -> Path:
    """A new file (mode 600) holding `text`, for the editor."""
    fd, path = tempfile.mkstemp(prefix=f"overbrainer-{name}-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return Path(path)


def _remove_temp(path: Path) -> None:
    path.unlink(missing_ok=True)


def _config_problem(root: Path) -> str | None:
    try:
        load_settings(root, dict(os.environ))
    except OverbrainerError as error:
        return error.message
    return None
