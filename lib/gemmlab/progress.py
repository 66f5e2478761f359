"""Progress a reader can see move, for work that runs long on the emulator.

    with ticking(bar):          # a tqdm bar whose elapsed time moves every second, even inside one long step
        ...
"""
from __future__ import annotations

import threading
from contextlib import contextmanager


@contextmanager
def ticking(bar, every: float = 1.0):
    """Redraw ``bar`` (a tqdm bar) every ``every`` seconds while the block runs, so that its elapsed time moves
    while one step (an emulated kernel's build or launch) takes a while; ``bar`` None does nothing."""
    if bar is None:
        yield bar
        return
    stop = threading.Event()

    def tick():
        while not stop.wait(every):
            bar.refresh()
    thread = threading.Thread(target=tick, name="gemmlab-progress", daemon=True)
    thread.start()
    try:
        yield bar
    finally:
        stop.set()
        thread.join()
