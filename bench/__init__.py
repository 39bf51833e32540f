"""Benchmarks of synapsecrawl: politeness efficiency, throughput and frontier memory.

Run one command each, from the project root: ``python -m bench.politeness``,
``python -m bench.throughput``, ``python -m bench.memory``; ``python -m bench.report``
runs them all and rewrites docs/benchmarks.md. Traffic goes only to 127.0.0.1.
"""
