"""What the bench scripts share: the best wall (and CPU) time of repeated calls."""
import time


def best_of(fn, repeat: int = 3):
    """Smallest wall time of ``repeat`` calls of ``fn``, and the last result: ``(seconds, result)``."""
    wall, _, out = best_of_both(fn, repeat)
    return wall, out


def best_of_both(fn, repeat: int = 3):
    """Smallest wall time and smallest CPU time (``time.process_time``: this process's threads, user +
    system) of ``repeat`` calls of ``fn``, and the last result: ``(wall, cpu, result)``. On a machine
    shared with other work the wall time grows with the load; the CPU time much less."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus), out
