"""Graceful stop of a training run on SIGINT (Ctrl-C) or SIGTERM: finish the current epoch, save, exit."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any


def exit_status(signal_name: str) -> int:
    """The shell's exit status of a program stopped by ``signal_name`` (128 + its number: SIGINT 130, SIGTERM 143),
    which a queue running the program reads to tell a stop from a failure."""
    return 128 + signal.Signals[signal_name].value


class StopOnSignal:
    """Within this context, the first SIGINT or SIGTERM only sets a flag (``requested()`` turns True) that the
    epoch callback reads at the next epoch boundary: it saves the run state there and stops training. A second
    signal restores the default behaviour (Ctrl-C again raises KeyboardInterrupt at once; the last saved run state
    is kept). Outside the main thread signals cannot be caught, and the context does nothing.

    Example:
        >>> with StopOnSignal() as stop:
        ...     stop.requested()
        False
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}

    def requested(self) -> bool:
        return self.signal_name is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signal_name is not None:  # second signal: stop now
            self._restore()
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        print(f"\n{self.signal_name}: saving at the end of this epoch, then stopping "
              "(send it again to stop at once and keep the last saved run state)", file=sys.stderr, flush=True)

    def __enter__(self) -> StopOnSignal:
        try:
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        except ValueError:  # not the main thread
            self._previous.clear()
        return self

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def __exit__(self, *exc: object) -> None:
        self._restore()
