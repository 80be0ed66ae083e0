"""The text gate: the compiled layers add exactly 0 on every token of the base's own text.

Every way a Qwen3.5 layer writes is multiplied by a gate that is a bias-free linear function
of the normalised residual `n(x)`: an MLP unit by `silu(gate_proj . n(x))`, a DeltaNet head's
state update by `sigmoid(in_proj_b . n(x))` and its output by `silu(in_proj_z . n(x))`.  In
float32 `sigmoid(z)` and `silu(z)` are exactly 0 for z <= -89 (`exp(-z)` overflows), so a
layer adds exactly 0, and a DeltaNet keeps its state exactly 0, on a token where every used
gate is driven that low.

A text token's residual in the compiled layers is its embedding `e_t` (nothing is added to
it), so what is needed is a direction `u` with `u . e_t < 0` for every text token: a
hyperplane through the origin with the whole text vocabulary on one side.  It lives on the
*gate dims*, the residual dims the machine leaves free, where every machine token's residual
is exactly 0 (its embedding and every compiled write are 0 there), so adding `s * u` to a
gate row changes nothing on machine tokens and drives the gate to at most `-GATE_FLOOR` on
text when `s >= (GATE_FLOOR + |row| sqrt(hidden)) / margin` (`|n(x)| <= sqrt(hidden)` for the
compiled layers' unit norm weights).

`rank_gate_dims` ranks the base's dims by how consistently the normalised embeddings keep
one sign there (`RankedDims` keeps the best and the rows on them, computed once); on the best
`separating_direction` tries a fast ascent (the mean direction, then a smoothed max-margin
ascent) and, where that falls short, `widest_direction` solves the max-margin problem
exactly as a linear program (HiGHS, through scipy).  On a large vocabulary both work on the
rows nearest the hyperplane (the only ones a max-margin direction depends on), chosen again
as the direction moves; every margin reported is measured on every row.
`find_text_gate` uses as few dims as give a good margin, since each gated unit carries a
weight per gate dim.  When even the linear program finds no margin, its dual is a proof that
none exists: a convex combination of text tokens' normalised embeddings that is (within
float64 rounding) the zero vector, so every direction leaves some text token on its wrong
side or at most `residual` from the hyperplane.  Such a base cannot be spliced exactly: a
`UserError` names how many tokens the best direction found leaves on the wrong side and what
the proof is (docs/splice.md, "The weakest condition").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from qwengpu.errors import UserError

GATE_FLOOR = 200.0          # the gate on text is at most -GATE_FLOOR (exact 0 needs <= -89)
ASCENT_STEPS = 400
GOOD_MARGIN = 0.25          # enough: the gate strength is (GATE_FLOOR + reach) / margin
# A table of more than twice this many rows (a 248k vocabulary) is ascended on this many of
# its rows nearest the hyperplane, chosen again every ASCENT_REFRESH steps.
ASCENT_ROWS = 8192
ASCENT_REFRESH = 25
# Below this margin the gate's strength makes float32's rounding of its sum a risk to the
# -GATE_FLOOR it must keep (docs/splice.md, "The weakest condition"): refused.
MIN_MARGIN = 1e-3


@dataclass
class TextGate:
    dims: list[int]              # base dims the direction lives on
    direction: torch.Tensor      # unit vector over `dims` (float64)
    margin: float                # min over text tokens of -direction . n(e_t)
    tokens: int                  # text tokens it was found on
    method: str = "ascent"       # "ascent" or "linear program"


@dataclass
class NoGateProof:
    """The linear program's dual where no margin exists: weights (summing to 1) on `tokens`
    text tokens whose normalised embeddings, so weighted, sum to a vector of length
    `residual`; every unit direction then has a margin of at most `residual`."""
    tokens: int
    residual: float
    weights: torch.Tensor        # one per text row (float64), nonnegative, summing to 1


CHUNK_ROWS = 16384          # text rows normalised at a time (a 248k vocabulary in pieces)


def inverse_rms(rows: torch.Tensor, eps: float) -> torch.Tensor:
    """`rsqrt(mean(x^2) + eps)` of every row, in float64, a chunk of rows at a time: what
    `Qwen3_5RMSNorm` (scale 1) multiplies a token's residual by."""
    pieces = []
    for start in range(0, len(rows), CHUNK_ROWS):
        chunk = rows[start:start + CHUNK_ROWS].double()
        pieces.append(torch.rsqrt(chunk.pow(2).mean(-1) + eps))
    return torch.cat(pieces)


def normalised(rows: torch.Tensor, eps: float, dims: list[int] | None = None,
               inverse: torch.Tensor | None = None) -> torch.Tensor:
    """`Qwen3_5RMSNorm` with scale 1, in float64: what a compiled layer reads of a token
    (only `dims` of it, when given); `inverse` is the rows' `inverse_rms` where known."""
    inverse = inverse_rms(rows, eps) if inverse is None else inverse
    chosen = rows if dims is None else rows[:, dims]
    return chosen.double() * inverse[:, None]


def rank_gate_dims(text_rows: torch.Tensor, eps: float,
                   inverse: torch.Tensor | None = None) -> list[int]:
    """The base's dims, best first for the gate: those where the normalised text embeddings
    keep one sign the best (|mean| / std largest).  The sums over rows are products with the
    rows' `inverse_rms` (and its square), a chunk of rows at a time."""
    inverse = inverse_rms(text_rows, eps) if inverse is None else inverse
    total = squares = None
    for start in range(0, len(text_rows), CHUNK_ROWS):
        chunk = text_rows[start:start + CHUNK_ROWS].double()
        scale = inverse[start:start + CHUNK_ROWS]
        part, part_squares = scale @ chunk, scale.pow(2) @ chunk.pow(2)
        total = part if total is None else total + part
        squares = part_squares if squares is None else squares + part_squares
    mean = total / len(text_rows)
    std = (squares / len(text_rows) - mean.pow(2)).clamp(min=0).sqrt()
    score = mean.abs() / (std + 1e-12)
    return torch.argsort(score, descending=True).tolist()


class RankedDims:
    """The `free` best gate dims (`rank_gate_dims`) and the text rows normalised on them,
    each computed once for every count of dims the gate tries (a 248k vocabulary's rows are
    2 GB: normalising them for each count was most of the gate's time), from one pass for
    the rows' norms."""

    def __init__(self, text_rows: torch.Tensor, free: int, eps: float):
        inverse = inverse_rms(text_rows, eps)
        self.ranked = rank_gate_dims(text_rows, eps, inverse)[:free]
        self.values = normalised(text_rows, eps, self.ranked, inverse)
        self.column = {dim: index for index, dim in enumerate(self.ranked)}

    def best(self, count: int) -> list[int]:
        """The `count` best dims, in increasing order."""
        return sorted(self.ranked[:count])

    def on(self, dims: list[int]) -> torch.Tensor:
        """The normalised text rows on `dims` (of the ranked ones), in that order."""
        return self.values[:, [self.column[dim] for dim in dims]]


def separating_direction(values: torch.Tensor, dims: list[int]) -> TextGate:
    """A unit `u` on `dims` with `u . n(e_t) < 0` for every text row (`values`: the rows
    normalised, on `dims`), margin as large as a short ascent finds (the caller judges the
    margin)."""
    direction = -values.mean(0)
    if float(direction.norm()) == 0.0:
        direction = -values[0]
    direction = direction / direction.norm()
    scale = float(values.abs().max()) or 1.0
    best, best_margin = direction, float((-(values @ direction)).min())
    rows = values
    for step in range(ASCENT_STEPS):
        if len(values) > 2 * ASCENT_ROWS and step % ASCENT_REFRESH == 0:
            # a large table: the steps see its rows nearest the hyperplane, chosen again
            # every ASCENT_REFRESH steps, where the direction is measured on every row
            reach = values @ direction
            margin = float(-reach.max())
            if margin > best_margin:
                best, best_margin = direction, margin
            rows = values[torch.topk(reach, ASCENT_ROWS).indices]
        temperature = scale * 0.05 * (1 - step / ASCENT_STEPS) + scale * 1e-3
        weights = torch.softmax((rows @ direction) / temperature, dim=0)
        direction = direction - 0.1 * (weights @ rows)
        direction = direction / direction.norm()
        if rows is values:
            margin = float((-(values @ direction)).min())
            if margin > best_margin:
                best, best_margin = direction, margin
    margin = float((-(values @ direction)).min())
    if margin > best_margin:
        best, best_margin = direction, margin
    return TextGate(dims, best, best_margin, len(values))


def widest_direction(values: torch.Tensor) -> tuple[TextGate, NoGateProof | None]:
    """The direction of largest margin for rows `values` (text tokens' normalised embeddings
    on some dims), exactly, as the linear program

        maximise m  subject to  values @ u + m <= 0,  -1 <= u_i <= 1

    (HiGHS).  Its dual minimises `|lambda @ values|_1` over convex weights `lambda`, so where
    the optimum is no margin the weights are a `NoGateProof`.  Returns the gate (its margin
    measured on the unit direction) and the proof, or None where a margin exists.

    A large table is solved by constraint generation (`active_rows`): the program on the rows
    nearest the hyperplane, then again with the rows its answer leaves on the wrong side,
    until it leaves none.  Its answer is then feasible for every row and optimal for a
    relaxation of the whole program, so it is the whole program's optimum (and its dual, with
    0 on the other rows, the whole program's proof)."""
    import numpy as np

    rows, count = values.shape
    table = values.numpy()
    active = active_rows(table)
    while True:
        solution, marginals = _solve_margin_program(table[active])
        slack = table @ solution[:count] + solution[count]
        slack[active] = -np.inf
        wrong = np.flatnonzero(slack > FEASIBLE)
        if len(wrong) == 0:
            break
        worst = wrong[np.argsort(slack[wrong])[::-1][:ACTIVE_ROWS]]
        active = np.concatenate([active, worst])
    direction = torch.from_numpy(solution[:count].copy())
    length = float(direction.norm())
    direction = direction / length if length > 0 else torch.zeros(count, dtype=torch.float64)
    margin = float((-(values @ direction)).min()) if length > 0 else 0.0
    gate = TextGate([], direction, margin, rows, "linear program")
    if margin > MIN_MARGIN:
        return gate, None
    weights = np.zeros(rows)
    weights[active] = np.clip(-marginals, 0.0, None)
    weights = torch.from_numpy(weights / weights.sum())
    residual = float((weights @ values).norm())
    return gate, NoGateProof(int((weights > 1e-12).sum()), residual, weights)


# The linear program starts on this many rows of a larger table, and adds at most as many a
# round; a row counts as on the wrong side past HiGHS's own feasibility tolerance.
ACTIVE_ROWS = 4096
FEASIBLE = 1e-7


def active_rows(table) -> "np.ndarray":
    """The rows the linear program starts with: all of a small table; of a large one, the
    ACTIVE_ROWS nearest the hyperplane of the mean direction (or on its wrong side)."""
    import numpy as np

    if len(table) <= 2 * ACTIVE_ROWS:
        return np.arange(len(table))
    mean = table.mean(axis=0)
    return np.argsort(table @ mean)[:ACTIVE_ROWS]


def _solve_margin_program(table) -> tuple["np.ndarray", "np.ndarray"]:
    """(u, m) of the margin program on `table`'s rows, and the inequalities' marginals."""
    import numpy as np
    from scipy.optimize import linprog

    rows, count = table.shape
    matrix = np.hstack([table, np.ones((rows, 1))])
    cost = np.zeros(count + 1)
    cost[-1] = -1.0
    result = linprog(cost, A_ub=matrix, b_ub=np.zeros(rows),
                     bounds=[(-1.0, 1.0)] * count + [(None, None)], method="highs")
    if result.status != 0:
        raise UserError(f"the text gate's linear program did not solve ({result.message})")
    return result.x, result.ineqlin.marginals


def find_text_gate(text_rows: torch.Tensor, free: int, eps: float) -> TextGate:
    """The text gate on as few dims as give a margin of GOOD_MARGIN, else the widest: the
    ascent's ladder (`ascent_ladder`); where it never reaches GOOD_MARGIN, the linear program
    on all `free` dims (the widest margin there is), then on halving counts of dims as long
    as they still give GOOD_MARGIN.  `UserError` when no margin above MIN_MARGIN exists."""
    ranked = RankedDims(text_rows, free, eps)
    tried = ascent_ladder(ranked)
    if tried[-1].margin >= GOOD_MARGIN:
        return tried[-1]
    exact, proof = widest_gate(ranked, free)
    tried.append(exact)
    best = max(tried, key=lambda found: found.margin)
    if best.margin <= MIN_MARGIN:
        raise UserError(refusal(ranked, tried, proof))
    count = free // 2
    while best.margin >= GOOD_MARGIN and count >= 1:
        fewer, _ = widest_gate(ranked, count)
        if fewer.margin < GOOD_MARGIN:
            break
        best, count = fewer, count // 2
    return best


def ascent_ladder(ranked: RankedDims) -> list[TextGate]:
    """The ascent on 1, 2, 4, ... of the ranked dims (every gated unit costs a weight per gate
    dim), up to the first that reaches GOOD_MARGIN or all of them: the gates tried, in order."""
    tried, count, free = [], 1, len(ranked.ranked)
    while True:
        count = min(count, free)
        dims = ranked.best(count)
        tried.append(separating_direction(ranked.on(dims), dims))
        if tried[-1].margin >= GOOD_MARGIN or count == free:
            return tried
        count *= 2


def widest_gate(ranked: RankedDims, count: int) -> tuple[TextGate, NoGateProof | None]:
    """`widest_direction` on the `count` best ranked dims."""
    dims = ranked.best(count)
    gate, proof = widest_direction(ranked.on(dims))
    gate.dims = dims
    return gate, proof


def refusal(ranked: RankedDims, tried: list[TextGate], proof: NoGateProof | None) -> str:
    """Why the base's text cannot be gated off: how many tokens the best direction tried
    leaves on the wrong side, and the proof that none does better (or the widest margin)."""
    wrong = min(int(((ranked.on(gate.dims) @ gate.direction) >= 0).sum())
                for gate in tried[-2:])       # the ascent and the program on all free dims
    widest = max(gate.margin for gate in tried)
    tokens, free = ranked.values.shape
    if proof is not None and proof.residual <= 1e-9:
        why = (f"no hyperplane has all {tokens} text tokens on one side ({wrong} on "
               f"the wrong side of the best found): {proof.tokens} of them have normalised "
               f"embeddings with a convex combination within {proof.residual:.2g} of zero, "
               "so every direction's margin is at most that")
    else:
        why = (f"the widest margin found is {widest:.3g}, not above the {MIN_MARGIN:g} a "
               f"float32 gate needs ({wrong} text tokens on the wrong side)")
    return (f"the base's text embeddings cannot be gated off: on the {free} residual dims "
            f"the machine leaves free {why}; the compiled layers could not add exactly 0 on "
            "text (docs/splice.md, \"The weakest condition\")")


def gate_rows_off(weight: torch.Tensor, rows: list[int], gate: TextGate, hidden: int,
                  dims: list[int] | None = None) -> None:
    """Add `s * u` on the gate dims to each of `rows` of `weight` (a gate's input projection,
    [out, hidden], machine coordinates with the gate dims at `dims`), `s` large enough that
    the row's gate is at most -GATE_FLOOR on every text token."""
    dims = gate.dims if dims is None else dims
    with torch.no_grad():
        for row in rows:
            reach = float(weight[row].double().norm()) * math.sqrt(hidden)
            strength = (GATE_FLOOR + reach) / gate.margin
            weight[row, dims] += (strength * gate.direction).to(weight.dtype)


def used_units(mlp) -> list[int]:
    """MLP units whose output column is not all zero."""
    return torch.nonzero(mlp.down_proj.weight.abs().sum(0)).flatten().tolist()


def used_heads(attn) -> list[int]:
    """DeltaNet value heads with any weight of their own (state update or output)."""
    heads = attn.num_v_heads
    width = attn.head_v_dim
    out = attn.out_proj.weight.abs().view(attn.out_proj.weight.shape[0], heads, width)
    written = out.sum((0, 2)) + attn.in_proj_b.weight.abs().sum(1)
    return torch.nonzero(written).flatten().tolist()


def gate_model_off(model, gate: TextGate, free_dims: list[int]) -> dict[str, int]:
    """Gate every used MLP unit and DeltaNet head of the compiled `model` (machine
    coordinates; its free dims `free_dims` become the base's `gate.dims`) off on text.
    Full-attention mixers of the compiled layers are empty (zero `o_proj`): nothing to gate.
    Returns counts for the report."""
    hidden = model.config.hidden_size
    counts = {"units": 0, "heads": 0}
    for layer in model.model.layers:
        units = used_units(layer.mlp)
        gate_rows_off(layer.mlp.gate_proj.weight, units, gate, hidden, free_dims)
        counts["units"] += len(units)
        if hasattr(layer, "linear_attn"):
            attn = layer.linear_attn
            heads = used_heads(attn)
            gate_rows_off(attn.in_proj_b.weight, heads, gate, hidden, free_dims)
            width = attn.head_v_dim
            z_rows = [h * width + i for h in heads for i in range(width)]
            gate_rows_off(attn.in_proj_z.weight, z_rows, gate, hidden, free_dims)
            counts["heads"] += len(heads)
        else:
            if layer.self_attn.o_proj.weight.abs().sum() != 0:
                raise ValueError("a compiled full-attention layer writes; the text gate "
                                 "does not cover it")
    return counts
