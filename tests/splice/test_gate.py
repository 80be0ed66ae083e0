"""The text gate on stand-in embedding tables in the Qwen3.5-2B width: chosen points of the
frontier docs/splice.md gives (`bench/bench_splice_frontier.py`, which draws the tables).

Each gate found is checked independently of `gate.py`: every row normalised here in numpy as
Qwen3.5's RMSNorm does (scale 1), and the direction's margin over every text token measured
against it.  A refusal's proof is checked the same way: its weights are convex and the
rows, so weighted, sum to (within rounding) zero, so no direction can have a margin.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bench_scripts import bench_script  # noqa: E402
from qwengpu.errors import UserError  # noqa: E402
from qwengpu.splice import gate as text_gate  # noqa: E402

frontier = bench_script("bench_splice_frontier")
# 117 free dims: the frontier table these points come from (the dims the machine left in the
# 2B width before the FPU's add; 50 now, docs/splice.md, "The frontier").
HIDDEN, FREE, TOKENS, EPS = 2048, 117, 8000, 1e-6


def normalised(rows) -> np.ndarray:
    values = rows.double().numpy()
    return values / np.sqrt((values ** 2).mean(axis=1, keepdims=True) + EPS)


def held_margin(rows, gate) -> float:
    """The gate's margin over every row, measured here."""
    direction = gate.direction.numpy()
    assert abs(np.linalg.norm(direction) - 1) < 1e-9
    return float((-(normalised(rows)[:, gate.dims] @ direction)).min())


def test_the_linear_program_gates_a_base_the_ascent_cannot():
    """shared 0.008: the ascent leaves text tokens on the wrong side (splice refused this
    base before); the linear program's direction has every token on its side."""
    rows = frontier.standin_embeddings(TOKENS, HIDDEN, 0.008)
    assert frontier.ascent_margin(rows, FREE) < 0
    gate = text_gate.find_text_gate(rows, FREE, EPS)
    assert gate.method == "linear program" and len(gate.dims) <= FREE
    assert held_margin(rows, gate) > text_gate.MIN_MARGIN
    assert abs(held_margin(rows, gate) - gate.margin) < 1e-9


def test_the_tests_shared_direction_keeps_the_fast_ascent():
    """shared 0.02 (the tests' bases): the ascent reaches GOOD_MARGIN on a few dims."""
    rows = frontier.standin_embeddings(TOKENS, HIDDEN, 0.02)
    gate = text_gate.find_text_gate(rows, FREE, EPS)
    assert gate.method == "ascent" and len(gate.dims) < FREE
    assert held_margin(rows, gate) >= text_gate.GOOD_MARGIN


def test_half_the_shared_direction_with_outliers():
    """shared 0.01 with 1% of heavy-tailed rows: gated, by a margin the ascent alone
    does not reach."""
    rows = frontier.standin_embeddings(TOKENS, HIDDEN, 0.01, outliers=True)
    gate = text_gate.find_text_gate(rows, FREE, EPS)
    assert held_margin(rows, gate) > max(text_gate.MIN_MARGIN,
                                         frontier.ascent_margin(rows, FREE))


@pytest.mark.parametrize("shared", [0.0, 0.005])
def test_no_gate_is_refused_with_a_proof(shared):
    """An isotropic table (as transformers initialises one) and one with a quarter of the
    tests' shared direction: refused, and the linear program's dual proves it."""
    rows = frontier.standin_embeddings(TOKENS, HIDDEN, shared)
    with pytest.raises(UserError) as refused:
        text_gate.find_text_gate(rows, FREE, EPS)
    message = refused.value.message
    assert f"on the {FREE} residual dims the machine leaves free no hyperplane has all " \
           f"{TOKENS} text tokens on one side" in message
    assert "convex combination within" in message and "The weakest condition" in message

    gate, proof = text_gate.widest_gate(text_gate.RankedDims(rows, FREE, EPS), FREE)
    dims = gate.dims
    weights = proof.weights.numpy()
    assert weights.min() >= 0 and abs(weights.sum() - 1) < 1e-12
    assert proof.tokens <= FREE + 1          # Caratheodory: at most dims + 1 points
    combination = weights @ normalised(rows)[:, dims]
    assert np.linalg.norm(combination) < 1e-9
    assert abs(np.linalg.norm(combination) - proof.residual) < 1e-9


@pytest.mark.parametrize("shared", [0.0, 0.01, 0.015])
def test_a_large_table_is_solved_on_its_rows_near_the_hyperplane(shared):
    """More rows than twice `ACTIVE_ROWS` (a real vocabulary's case): the linear program
    solved by adding the rows its answer leaves on the wrong side has the margin of the
    program on every row at once; a refusal's proof holds on every row; the ascent's margin
    is measured on every row."""
    tokens, free = 20_000, 50
    assert tokens > 2 * text_gate.ACTIVE_ROWS and tokens > 2 * text_gate.ASCENT_ROWS
    rows = frontier.standin_embeddings(tokens, HIDDEN, shared, seed=3)
    ranked = text_gate.RankedDims(rows, free, EPS)
    dims = ranked.best(free)
    values = ranked.on(dims)
    whole, _ = text_gate._solve_margin_program(values.numpy())
    direction = whole[:free] / np.linalg.norm(whole[:free]) if whole[free] > 0 else None
    want = float((-(values.numpy() @ direction)).min()) if direction is not None else 0.0
    gate, proof = text_gate.widest_gate(ranked, free)
    assert abs(gate.margin - max(want, 0.0)) < 1e-6
    if gate.margin > text_gate.MIN_MARGIN:
        assert proof is None and abs(held_margin(rows, gate) - gate.margin) < 1e-9
    else:
        weights = proof.weights.numpy()
        assert weights.min() >= 0 and abs(weights.sum() - 1) < 1e-12
        assert np.linalg.norm(weights @ normalised(rows)[:, dims]) < 1e-9
    ascent = text_gate.separating_direction(values, dims)
    assert abs(held_margin(rows, ascent) - ascent.margin) < 1e-9
