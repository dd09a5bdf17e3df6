"""The Trio event bus that fans events out to subscribers and an observer."""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Protocol

import attrs
import trio
import trio.lowlevel

from overbrainer.events.types import Event
from overbrainer.model.error_groups import unwrapped

log = logging.getLogger(__name__)

CAPACITY = 1024
"""Events a subscriber may fall behind by before it loses the oldest."""


class Observer(Protocol):
    """Sees every event of its buses, synchronously and without loss, and each bus's end."""

    def event(self, bus: int, event: Event) -> None:
        """One event published on bus `bus`."""

    def closed(self, bus: int) -> None:
        """Bus `bus` closed; its ID may be reused later."""


class Observers:
    """Several observers as one (the events file and the metrics), each failure contained."""

    def __init__(self, *observers: Observer | None) -> None:
        self._all = [observer for observer in observers if observer is not None]

    def event(self, bus: int, event: Event) -> None:
        for observer in self._all:
            try:
                observer.event(bus, event)
            except Exception:
                log.exception("an event observer failed")

    def closed(self, bus: int) -> None:
        for observer in self._all:
            try:
                observer.closed(bus)
            except Exception:
                log.exception("an event observer failed")


@attrs.frozen
class Lagged:
    """The subscriber fell behind and lost its `n` oldest events."""

    n: int


_open_bus_ids: set[int] = set()


def _claim_bus_id() -> int:
    bus_id = next(i for i in itertools.count(1) if i not in _open_bus_ids)
    _open_bus_ids.add(bus_id)
    return bus_id


class Subscription:
    """One subscriber's view of a bus: events published after it subscribed, or `Lagged`."""

    def __init__(self, receive: trio.MemoryReceiveChannel[tuple[int, Event]], start: int) -> None:
        self._receive = receive
        self._expected = start
        self._ready: collections.deque[Event | Lagged] = collections.deque()

    def _take(self, seq: int, event: Event) -> None:
        if seq > self._expected:
            self._ready.append(Lagged(seq - self._expected))
        self._expected = seq + 1
        self._ready.append(event)

    def _take_queued(self, max_events: int) -> None:
        for _ in range(max_events):
            try:
                seq, event = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                return
            self._take(seq, event)

    async def receive(self) -> Event | Lagged:
        """The next item; raises `trio.EndOfChannel` once the bus closed and all is read."""
        if not self._ready:
            self._take(*await self._receive.receive())
        return self._ready.popleft()

    async def receive_batch(self, max_events: int = CAPACITY) -> list[Event | Lagged]:
        """Wait for at least one item, then take what is queued (about `max_events` events)."""
        if not self._ready:
            self._take(*await self._receive.receive())
            self._take_queued(max_events - 1)
        return self._drain_ready()

    def receive_nowait(self) -> list[Event | Lagged]:
        """Whatever is queued now, without waiting; empty when nothing is."""
        self._take_queued(CAPACITY * 1024)
        return self._drain_ready()

    def _drain_ready(self) -> list[Event | Lagged]:
        items = list(self._ready)
        self._ready.clear()
        return items

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event | Lagged:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop receiving; the bus stops delivering to this subscriber."""
        self._receive.close()


@attrs.define
class _Subscriber:
    send: trio.MemorySendChannel[tuple[int, Event]]
    # The fan-out's own clone of the receive end: it takes the oldest event out of a full buffer.
    drop: trio.MemoryReceiveChannel[tuple[int, Event]]
    start: int


class EventBus:
    """Publishes events to an observer (synchronously) and to subscribers (via a fan-out task)."""

    def __init__(self, bus_id: int, capacity: int, observer: Observer | None) -> None:
        self.id = bus_id
        self.capacity = max(1, capacity)
        self._observer = observer
        self._pending: collections.deque[tuple[int, Event]] = collections.deque()
        self._subscribers: list[_Subscriber] = []
        self._next_seq = 0
        self._wakeup = trio.Event()
        # Set while nothing waits for the fan-out: `delivered` waits on it instead of polling.
        self._idle = trio.Event()
        self._idle.set()
        self._closing = False

    def publish(self, event: Event) -> None:
        """Hand an event to the observer, then queue it for the subscribers; never blocks."""
        if self._closing:
            return
        if self._observer is not None:
            try:
                self._observer.event(self.id, event)
            except Exception:
                log.exception("the event observer failed")
        seq = self._next_seq
        self._next_seq += 1
        if self._subscribers:
            self._pending.append((seq, event))
            if self._idle.is_set():
                self._idle = trio.Event()
            if len(self._pending) > self.capacity:
                # Every subscriber would drop this one anyway; keep memory bounded.
                self._pending.popleft()
            self._wakeup.set()

    def subscribe(self) -> Subscription:
        """A subscription to every event published from now on."""
        send, receive = trio.open_memory_channel[tuple[int, Event]](self.capacity)
        if self._closing:
            send.close()
        else:
            self._subscribers.append(_Subscriber(send, receive.clone(), self._next_seq))
        return Subscription(receive, self._next_seq)

    async def delivered(self) -> None:
        """Return once every event published so far is in its subscribers' buffers."""
        while self._pending and not self._closing:
            await self._idle.wait()

    def _deliver_pending(self) -> None:
        while self._pending:
            seq, event = self._pending.popleft()
            for subscriber in self._subscribers:
                if seq < subscriber.start:
                    continue
                try:
                    subscriber.send.send_nowait((seq, event))
                except trio.WouldBlock:
                    with contextlib.suppress(trio.WouldBlock):
                        subscriber.drop.receive_nowait()
                    subscriber.send.send_nowait((seq, event))
                except trio.BrokenResourceError:
                    subscriber.start = -1
            if any(s.start < 0 for s in self._subscribers):
                self._forget_closed()
        self._idle.set()

    def _forget_closed(self) -> None:
        for subscriber in [s for s in self._subscribers if s.start < 0]:
            subscriber.send.close()
            subscriber.drop.close()
            self._subscribers.remove(subscriber)

    async def _fan_out(self) -> None:
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                self._deliver_pending()
                if self._closing:
                    return
        finally:
            self._closing = True
            self._deliver_pending()
            for subscriber in self._subscribers:
                subscriber.send.close()
                subscriber.drop.close()
            self._subscribers.clear()

    def _close(self) -> None:
        self._closing = True
        self._wakeup.set()


@contextlib.asynccontextmanager
async def open_event_bus(
    capacity: int = CAPACITY, observer: Observer | None = None
) -> AsyncIterator[EventBus]:
    """Open a bus whose fan-out task lives in a nursery; leaving it drains and closes the bus."""
    bus = EventBus(_claim_bus_id(), capacity, observer)
    try:
        async with unwrapped(), trio.open_nursery() as nursery:
            nursery.start_soon(bus._fan_out)
            try:
                yield bus
            finally:
                bus._close()
    finally:
        _open_bus_ids.discard(bus.id)
        if observer is not None:
            try:
                observer.closed(bus.id)
            except Exception:
                log.exception("the event observer failed")
