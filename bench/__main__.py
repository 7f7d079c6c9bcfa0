"""Run the benchmarks and print their results as markdown for docs/BENCHMARKS.md.

    python -m bench            # all benchmarks
    python -m bench import     # one of them
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

from bench import bench_chat, bench_costs, bench_graph, bench_injection, bench_load, bench_mcp, bench_hybrid, bench_import, bench_indexing, bench_lexical, bench_quality, bench_workers

BENCHMARKS = {
    "import": bench_import.run,
    "lexical": bench_lexical.run,
    "hybrid": bench_hybrid.run,
    "indexing": bench_indexing.run,
    "quality": bench_quality.run,
    "chat": bench_chat.run,
    "graph": bench_graph.run,
    "costs": bench_costs.run,
    "mcp": bench_mcp.run,
    "load": bench_load.run,
    "injection": bench_injection.run,
    "workers": bench_workers.run,
}


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("names", nargs="*", choices=[[], *BENCHMARKS], help="benchmarks to run (default: all)")
    args = parser.parse_args(argv)
    print(f"Machine: {machine()}\n")
    for name in args.names or BENCHMARKS:
        print(BENCHMARKS[name]())
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
