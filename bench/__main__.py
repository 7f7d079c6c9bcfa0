"""Run the benchmarks and print their results as markdown for docs/BENCHMARKS.md.

    python -m bench            # all benchmarks
    python -m bench import     # one of them
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys

# name -> module in bench/ with a run() -> str; imported only when run, so one benchmark that does not import
# (its module mid-rewrite) does not stop the others.
BENCHMARKS = {
    "import": "bench_import",
    "lexical": "bench_lexical",
    "hybrid": "bench_hybrid",
    "indexing": "bench_indexing",
    "quality": "bench_quality",
    "long": "bench_long",
    "index-size": "bench_index_size",
    "chat": "bench_chat",
    "graph": "bench_graph",
    "page-weight": "bench_page_weight",
    "costs": "bench_costs",
    "mcp": "bench_mcp",
    "load": "bench_load",
    "injection": "bench_injection",
    "workers": "bench_workers",
    "documents": "bench_documents",
    "abstain": "bench_abstain",
    "first-answer": "bench_first_answer",
    "turn-cpu": "bench_turn_cpu",
    "gaps": "bench_gaps",
    "hostile": "bench_hostile",
    "people": "bench_people",
    "conversation": "bench_conversation",
    "rewrite": "bench_rewrite",
    "gap-signal": "bench_gap_signal",
    "replication": "bench_replication",
    "vector-engine": "bench_vector_engine",
    "answers": "bench_answers",
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
        print(importlib.import_module(f"bench.{BENCHMARKS[name]}").run())
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
