"""A worker killed in the middle of an evaluation lane, as the resume tests need it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from procurement.services import evaluations as svc


class Killed(BaseException):
    """A worker process killed mid-run: nothing after it runs (not even except Exception)."""


@contextmanager
def killed_after_stores(monkeypatch: pytest.MonkeyPatch, stores: int) -> Iterator[list[int]]:
    """Inside the block, a lane dies (raises :class:`Killed`) right after its ``stores``-th
    store of finished episodes; yields each store's count of the lane's episodes done. The
    block must raise Killed; the lane stores normally again after it."""
    real, done = svc._Lane.flush, []

    def flush_then_die(lane) -> None:
        real(lane)
        done.append(lane.part.done_episodes)
        if len(done) == stores:
            raise Killed

    monkeypatch.setattr(svc._Lane, "flush", flush_then_die)
    with pytest.raises(Killed):
        yield done
    monkeypatch.setattr(svc._Lane, "flush", real)
