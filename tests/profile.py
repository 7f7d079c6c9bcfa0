"""Where the time of `.ci/run` goes: `make test-profile` (python -m tests.profile).

Runs what CI runs, in a fresh clone of HEAD (as CI does; `--here` runs in this tree instead, with its venv and
caches as they are), one phase at a time: setup (`make setup test-deps`), check (`make check`), the unit and
integration tests, the browser tests, each exactly as `make test` starts them. For every phase it records the
wall time and how busy the machine's cores were (sampled every second: what is not busy is waiting: sleeps,
timeouts, a subprocess starting, one worker idle while the other finishes). From pytest's own reports (junit XML)
it takes the slowest tests and the slowest modules, and from `--durations` the slowest fixture set-ups.

It prints the report and writes it between the markers in docs/TESTING.md (`--no-write`: print only), so the
figures there are the last profile that anyone ran. A full run takes as long as CI: ~15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "TESTING.md"
START, END = "<!-- profile:start -->", "<!-- profile:end -->"
SLOWEST = 50


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    busy: float = 0.0  # mean share of all cores in use, 0..1
    rc: int = 0
    junit: Path | None = None
    output: str = ""


@dataclass
class Profile:
    phases: list[Phase] = field(default_factory=list)
    tests: list[tuple[float, str]] = field(default_factory=list)  # (seconds, nodeid), setup+call+teardown
    setups: list[tuple[float, str]] = field(default_factory=list)  # (seconds, nodeid) of slow fixture set-ups


class CpuSampler:
    """The machine's CPU use, sampled once a second in a thread, while a phase runs."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        psutil.cpu_percent(None)
        while not self._stop.wait(1.0):
            self.samples.append(psutil.cpu_percent(None) / 100)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples) if self.samples else 0.0


def run_phase(name: str, command: list[str], cwd: Path, env: dict[str, str], log: Path) -> Phase:
    phase = Phase(name)
    print(f"== {name}: {' '.join(command)}", flush=True)
    start = time.monotonic()
    with CpuSampler() as cpu, log.open("ab") as out:
        phase.rc = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    phase.seconds, phase.busy = time.monotonic() - start, cpu.mean
    print(f"   {phase.seconds:.0f} s, cores {phase.busy:.0%} busy, exit {phase.rc}", flush=True)
    return phase


DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+)", re.M)


def read_junit(path: Path) -> list[tuple[float, str]]:
    """(seconds, nodeid) per test: pytest's junit `time` is setup + call + teardown."""
    if not path.exists():
        return []
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        out.append((float(case.get("time") or 0), f"{module}::{case.get('name')}"))
    return out


def profile(here: bool) -> Profile:
    work = ROOT if here else Path(tempfile.mkdtemp(prefix="r42-profile-")) / "r42"
    if not here:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True)
    log = Path(tempfile.mkdtemp(prefix="r42-profile-log-")) / "run.log"
    print(f"working in {work}; full output in {log}", flush=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_ARGS", "PYTEST_XDIST_WORKER")}
    python = str(work / ".venv" / "bin" / "python")
    result = Profile()
    result.phases.append(run_phase("setup", ["make", "setup", "test-deps"], work, env, log))
    result.phases.append(run_phase("check", ["make", "check"], work, env, log))
    # The two halves exactly as `make test` starts them (the browser half's builds made in the background while the
    # unit half runs, on E2E_WORKERS workers: the Makefile's default), each with a junit report and fixture durations.
    workers = os.environ.get("E2E_WORKERS", "2")
    subprocess.run([python, "-m", "tests.prebuild", "start", workers], cwd=work, env=env, check=True)
    halves = (("unit + integration", ["tests/unit", "tests/integration", "-n", "auto", "--dist", "loadscope"], {}),
              ("browser", ["tests/e2e", "-n", workers, "--dist", "loadscope"], {"R42_E2E_PREBUILT": "1"}))
    for i, (name, args, extra) in enumerate(halves):
        junit = log.parent / f"junit-{i}.xml"
        before = log.stat().st_size if log.exists() else 0
        phase = run_phase(name, [python, "-m", "pytest", *args, f"--junitxml={junit}", f"--durations={SLOWEST * 2}",
                                 "-p", "no:cacheprovider"], work, {**env, **extra}, log)
        phase.junit = junit
        with log.open("rb") as f:
            f.seek(before)
            phase.output = f.read().decode(errors="replace")
        result.tests += read_junit(junit)
        result.setups += [(float(s), nodeid) for s, when, nodeid in DURATION.findall(phase.output) if when == "setup"]
        result.phases.append(phase)
    subprocess.run([python, "-m", "tests.prebuild", "stop"], cwd=work, env=env, check=False)  # a build left running
    return result


def report(result: Profile, where: str) -> str:
    total = sum(p.seconds for p in result.phases)
    cores = psutil.cpu_count() or 1
    head = (f"Measured {time.strftime('%Y-%m-%d')} on {platform.node() or 'this machine'} ({cores} cores, "
            f"{psutil.virtual_memory().total / 2**30:.0f} GB, Python {platform.python_version()}), {where}: "
            f"**{total / 60:.1f} minutes** in all. Busy: the mean share of all cores in use during the phase; the "
            "rest is waiting (sleeps, timeouts, start-ups, a worker idle while another finishes).")
    lines = [head, "",
             "| phase | wall | cores busy | idle core-seconds | exit |", "|---|---:|---:|---:|---:|"]
    for p in result.phases:
        lines.append(f"| {p.name} | {p.seconds:.0f} s | {p.busy:.0%} | {(1 - p.busy) * p.seconds * cores:.0f} "
                     f"| {p.rc} |")
    modules: dict[str, float] = defaultdict(float)
    for seconds, nodeid in result.tests:
        modules[nodeid.split("::")[0]] += seconds
    intro = (f"The slowest modules (set-up, tests and tear-down; {len(result.tests)} tests, "
             f"{sum(modules.values()):.0f} worker-seconds):")
    lines += ["", intro, "", "| module | seconds |", "|---|---:|"]
    lines += [f"| `{m}` | {s:.1f} |" for m, s in sorted(modules.items(), key=lambda kv: -kv[1])[:20]]
    intro = f"The slowest {SLOWEST} tests (set-up + call + tear-down, so a module's first test carries its fixtures):"
    lines += ["", intro, "", "| seconds | test |", "|---:|---|"]
    lines += [f"| {s:.1f} | `{n}` |" for s, n in sorted(result.tests, reverse=True)[:SLOWEST]]
    lines += ["", "The slowest fixture set-ups:", "", "| seconds | first test that needed it |", "|---:|---|"]
    lines += [f"| {s:.1f} | `{n}` |" for s, n in sorted(result.setups, reverse=True)[:15]]
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    if START not in doc or END not in doc:
        sys.exit(f"{DOC} has no {START} ... {END} section to write into")
    head, rest = doc.split(START, 1)
    DOC.write_text(f"{head}{START}\n{text}\n{END}{rest.split(END, 1)[1]}")
    print(f"written to {DOC.relative_to(ROOT)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--here", action="store_true", help="profile this tree as it is, not a fresh clone of HEAD")
    parser.add_argument("--no-write", action="store_true", help=f"print only; leave {DOC.name} as it is")
    args = parser.parse_args()
    result = profile(args.here)
    text = report(result, "this tree" if args.here else "a fresh clone of HEAD, as CI runs it")
    print(text)
    if not args.no_write:
        write_doc(text)
    return max(p.rc for p in result.phases)


if __name__ == "__main__":
    sys.exit(main())
