"""A progress bar for long simulations (tqdm on standard error): images done of the run, simulated
cycles per second, the time left.  Shown only when standard error is a terminal (or when asked);
never in a log file or a pipe."""

from __future__ import annotations

import sys
import time


class SimProgress:
    """``callback(images_done, cycle)`` for :func:`pymtl_fp.cluster.run.train.train_on_cluster`."""

    def __init__(self, total_images: int, enabled: bool | None = None, label: str = "simulating"):
        from tqdm import tqdm

        if enabled is None:
            enabled = sys.stderr.isatty()
        self.bar = tqdm(total=total_images, unit="image", desc=label, disable=not enabled, file=sys.stderr,
                        dynamic_ncols=True, leave=False)
        self.t0 = time.perf_counter()
        self.done = 0
        self.last_post = 0.0

    def __call__(self, images_done: int, cycle) -> None:
        if images_done > self.done:
            self.bar.update(images_done - self.done)
            self.done = images_done
        now = time.perf_counter()
        if cycle is not None and now - self.last_post > 0.5:
            self.last_post = now
            self.bar.set_postfix_str(f"cycle {cycle:,}, {cycle / max(now - self.t0, 1e-9):,.0f} cycles/s",
                                     refresh=False)

    def close(self) -> None:
        self.bar.close()


class TaskProgress:
    """``callback(done, total)`` for a fan-out of tasks (:func:`pymtl_fp.distributed.mapper`)."""

    def __init__(self, label: str, enabled: bool | None = None):
        self.label, self.bar = label, None
        self.enabled = sys.stderr.isatty() if enabled is None else enabled

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None:
            self.bar = tqdm(total=total, unit="task", desc=self.label, disable=not self.enabled, file=sys.stderr,
                            leave=False)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
