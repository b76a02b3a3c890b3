"""Test benches: sources/sinks with random stalls, scoreboards, harnesses, Hypothesis strategies and profiles."""
