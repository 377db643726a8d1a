#!/usr/bin/env python3
"""Load check of a harness driver: N clients in one driver process.

Opens N clients at once, sends every one a blocking acquire, then releases
each holder in turn, checking that exactly one holds at a time. Prints the
time of each phase and the driver's RSS (current and peak) and thread count.

    python3 harness/drivers/testing/stampede.py -n 1000 python3 harness/drivers/kazoo/driver.py
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from selftest import Driver, Failure, ZkMock, check, find_zk_mock  # noqa: E402


def proc_status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def usage(pid: int) -> str:
    st = proc_status(pid)
    return f"RSS {st['VmRSS'].strip()}, peak {st['VmHWM'].strip()}, {st['Threads'].strip()} threads"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=300, help="clients (default 300)")
    ap.add_argument("--session-timeout-ms", type=int, default=10_000)
    ap.add_argument("--tick-time", type=int, default=500, help="zk-mock's tick, ms (sessions up to 20 ticks)")
    ap.add_argument("--zk-mock", help="the zk-mock binary (default: $ZK_MOCK or target/debug/zk-mock)")
    ap.add_argument("driver", nargs=argparse.REMAINDER, help="the driver command")
    args = ap.parse_args()
    cmd = args.driver[1:] if args.driver[:1] == ["--"] else args.driver
    cmd = shlex.split(cmd[0]) if len(cmd) == 1 else cmd
    if not cmd:
        ap.error("no driver command")

    zk = ZkMock(find_zk_mock(args.zk_mock, 0), args.tick_time)
    drv = Driver(cmd)
    n, path = args.n, "/stampede/lock"
    names = [f"c.{i}" for i in range(n)]
    try:
        drv.call("init", protocol=1)
        print(f"driver started: {usage(drv.proc.pid)}")

        t0 = time.monotonic()
        opens = [drv.send("open", client=c, connect=zk.connect, session_timeout_ms=args.session_timeout_ms,
                          lock={"kind": "exclusive", "path": path}) for c in names]
        for rid in opens:
            r = drv.reply(rid, timeout=120)
            check(r["ok"], f"open failed: {r}")
        t_open = time.monotonic() - t0
        check(len(zk.sessions()) == n, f"{len(zk.sessions())} sessions at the server, expected {n}")
        print(f"opened {n} clients in {t_open:.1f}s: {usage(drv.proc.pid)}")

        t0 = time.monotonic()
        acquires = {drv.send("acquire", client=c, role="exclusive", mode="block"): c for c in names}
        # Every contender's node is created before the first hand-off.
        deadline = time.monotonic() + 120
        while len(zk.children(path)) < n:
            check(time.monotonic() < deadline, f"only {len(zk.children(path))} of {n} lock nodes")
            time.sleep(0.2)
        t_nodes = time.monotonic() - t0
        print(f"{n} contenders queued in {t_nodes:.1f}s: {usage(drv.proc.pid)}")

        t0 = time.monotonic()
        waiting = dict(acquires)
        for turn in range(n):
            with drv.cond:
                drv.cond.wait_for(lambda: any(rid in drv.replies for rid in waiting), 60)
                done = [rid for rid in waiting if rid in drv.replies]
            check(len(done) == 1, f"turn {turn}: {len(done)} clients acquired at once")
            rid = done[0]
            r = drv.replies[rid]
            check(r["ok"] and r["acquired"], f"turn {turn}: {r}")
            holder = waiting.pop(rid)
            drv.call("release", client=holder)
        t_turns = time.monotonic() - t0
        print(f"{n} hand-offs in {t_turns:.1f}s ({t_turns / n * 1000:.1f} ms each): {usage(drv.proc.pid)}")

        t0 = time.monotonic()
        drv.call("shutdown", timeout=60)
        code = drv.proc.wait(60)
        check(code == 0, f"driver exit code {code}")
        check(not zk.sessions(), "sessions left after shutdown")
        print(f"shutdown in {time.monotonic() - t0:.1f}s")
        check(not drv.violations, f"protocol violations: {drv.violations[:5]}")
        print("PASSED")
        return 0
    except Failure as e:
        print(f"FAIL: {e}\n---- driver stderr (tail) ----\n{drv.stderr_tail()}")
        return 1
    finally:
        drv.kill()
        zk.stop()


if __name__ == "__main__":
    sys.exit(main())
