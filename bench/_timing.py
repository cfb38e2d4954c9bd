"""What the bench scripts share: the best wall time of repeated calls."""
import time


def best_of(fn, repeat: int = 3):
    """Smallest wall time of ``repeat`` calls of ``fn``, and the last result: ``(seconds, result)``."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out
