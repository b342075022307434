"""Configuration of the generic stream bench (benches/stream.py), shared by both sides.

The pytest side builds a :class:`BenchConfig` and hands it to the simulation as JSON in one
environment variable, ``TCGEN_BENCH``; the bench reads it back with :meth:`BenchConfig.from_env`.
No cocotb import here, so tests can use it.

Scenarios (each one a cocotb test of the bench, each starting from reset):

``back_to_back``         valid and ready always high, the whole stimulus; measures latency (from
                         the first cycle the input that produces the first output is offered to
                         that output), the issue intervals between accepted inputs and the cycles
                         from the first input offered to the last output taken.
``backpressure``         the first ``stress_ops`` inputs under idle cycles on every input stream
                         (``idle`` probability and/or scripted ``valid_pattern``) and stalls on
                         every output stream (``stall`` / ``ready_pattern``).
``reset_mid_operation``  the first ``reset_ops`` inputs under the same idle/stall patterns, reset
                         ``reset_at`` cycles later (default: one cycle after half of them were
                         accepted) with operations in flight, a check that no
                         output is valid after it (``reset_leaked``), then the first
                         ``stress_ops`` inputs again (same patterns), scored.

Patterns: a scripted pattern is a string of ``0``/``1`` (``_`` and spaces ignored), one character
per cycle, repeated; ``1`` lets valid rise (a new input may be offered) or holds ready high. It
combines with the random probability (both must allow the cycle).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields

__all__ = ["BenchConfig", "SCENARIOS", "ENV", "run_stream"]

ENV = "TCGEN_BENCH"
SCENARIOS = ("back_to_back", "backpressure", "reset_mid_operation")


@dataclass(frozen=True)
class BenchConfig:
    scenarios: tuple[str, ...] = SCENARIOS
    idle: float = 0.3               # P(input valid held low in a cycle a new input could go)
    valid_pattern: str | None = None
    stall: float = 0.4              # P(output ready low in a cycle)
    ready_pattern: str | None = None
    stress_ops: int = 0             # inputs used by backpressure / reset (0: the whole stimulus)
    reset_ops: int = 0              # inputs driven before the reset (0: half the stress inputs)
    reset_at: int | None = None     # cycles from the start of that drive to the reset
    #                                 (None: one cycle after half of them were accepted)
    seed: int = 1
    max_report: int = 10            # mismatches printed per scenario

    def __post_init__(self):
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        bad = [s for s in self.scenarios if s not in SCENARIOS]
        if bad:
            raise ValueError(f"BenchConfig: unknown scenarios {bad}; known: {SCENARIOS}")
        for name in ("idle", "stall"):
            v = getattr(self, name)
            if not 0.0 <= v < 1.0:
                raise ValueError(f"BenchConfig: {name} must be in [0, 1), got {v}")
        for name in ("valid_pattern", "ready_pattern"):
            pat = getattr(self, name)
            if pat is not None:
                bits = pat.replace("_", "").replace(" ", "")
                if not bits or set(bits) - {"0", "1"} or "1" not in bits:
                    raise ValueError(f"BenchConfig: {name} must be a string of 0/1 with at "
                                     f"least one 1, got {pat!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "BenchConfig":
        values = json.loads(text)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"BenchConfig: unknown keys {unknown}; known: {sorted(known)}")
        return cls(**values)

    @classmethod
    def from_env(cls) -> "BenchConfig":
        text = os.environ.get(ENV)
        return cls.from_json(text) if text else cls()

    def env(self) -> dict[str, str]:
        """``extra_env`` for :func:`harness.run`."""
        return {ENV: self.to_json()}


def run_stream(unit: str, params, stimulus: dict, name: str = "run",
               testcase: str | None = None, sim: str | None = None, **config) -> dict:
    """``harness.run`` of the generic stream bench with ``BenchConfig(**config)`` (``sim``: the
    test's simulator, see harness.run)."""
    from .harness import run
    cfg = BenchConfig(**config)
    return run(unit, params, bench="stream", stimulus=stimulus, name=name, testcase=testcase,
               extra_env=cfg.env(), sim=sim)
