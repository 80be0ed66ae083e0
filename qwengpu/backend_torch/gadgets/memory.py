"""Gated DeltaNet heads as key->value memories: register files, global memory, latches.

A head of a `Qwen3_5GatedDeltaNet` whose decay is exactly 1 (the blank model's `A_log`) keeps
a state `S` of 128 key rows by 128 value columns.  With a one-hot key `k = e_s` and
`beta = 1`, the delta rule `S += k (beta (v - S^T k))^T` replaces row `s` by `v` exactly and
leaves every other row alone; with `beta = 0` nothing changes; the query `q = e_s` then reads
`o = S^T q = S[s] / sqrt(128)`.  The write happens before the read within a token.  So one
head is a 128-slot memory of 128-dim values, and `docs/state.md` describes how the machine's
registers, memory and program live in such heads.

How the pieces of the head are driven (constants in `MixerDrive`):

- **keys, queries, values** come out of `silu(conv1d(in_proj_qkv x))`.  Each channel reads one
  token of the conv window (the *tap*: 0 = the current token, 1..3 = that many tokens back;
  the other taps are zeroed).  A channel that should be 1 when a set of `n` one-hot entries
  is hot gets the pre-activation `gain * (sum of those entries) - gain * (n - 1) - offset`:
  all hot gives `gain - offset`, any one cold gives `-offset` or less, where silu is ~0.  So
  the conv's SiLU *is* an AND gate: an address that is a pair of one-hot groups (warp x
  register) needs no helper MLP.  q and k are L2-normalised by the layer, so only the ratio
  of cold to hot channels matters: keys use a large offset (inputs may be `offset / (n gain)`
  off and the key stays clean).  Values are stored at `gain - offset` per hot entry, where
  `silu(x) == x`, so a value read back carries the deviation it was written with times
  `gain / (gain - offset)`: the memory is exact on the slot, linear on the value.
- **write enable** is `beta = sigmoid(in_proj_b x)` of the current token: `+beta_drive` when
  every write condition holds (exactly 1 after the sigmoid), `-beta_drive` or less otherwise
  (exactly 0).
- **read out**: the layer's per-head `Qwen3_5RMSNormGated` divides the read value by its RMS
  over the head's 128 dims (the shared norm weight stays 1), so a hot entry of a head holding
  `n` one-hot groups reads `sqrt(128 / n)` whatever the stored magnitude; `z = gate_drive`
  from ONE makes `silu(z) == z`; `out_proj` scales the result back to the output groups' scale.
- **initialisation**: a slot never written would read 0 and break the norm ledger, so every
  slot holds a value from the first tokens on.  On a token whose `init` bit is set every key
  channel of the memory is driven hot: the key is spread over all slots, and the delta rule
  writes the token's value (its value groups, normally the all-zero word) into every slot, at
  a smaller magnitude that the read-out norm removes.  A later one-hot write replaces a slot
  exactly.  Value channels read at taps 1..3 see the tokens before the init token, so the
  launch prompt begins with the init token repeated `INIT_WINDOW` times (`docs/state.md`).

A `Memory` describes the writes (address, value, conditions, init) and `install` puts one
*replica* into given value heads of a layer: the same writes, plus that replica's read port
(its own query address and output groups).  Several reads per token are several replicas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence, Union

import torch

from qwengpu.backend_torch.cubes import disjoint_cubes
from qwengpu.backend_torch.gadgets.core import Form, const, entries, is_value, put
from qwengpu.backend_torch.residual import BINARY, ONE_DIM, Group, Live, Word

CONV_KERNEL = 4
INIT_WINDOW = CONV_KERNEL     # init tokens at the start of a launch: a full conv window
LINEAR_ATTENTION = "linear_attention"


@dataclass(frozen=True)
class MixerDrive:
    """How hard the DeltaNet channels are driven (see the module doc)."""

    key_gain: float      # q/k: all entries hot sits at key_gain - key_offset
    key_offset: float    # q/k: a cold entry puts the channel at -key_offset or below
    value_gain: float    # values: stored at value_gain - value_offset per hot entry
    value_offset: float
    beta: float          # in_proj_b pre-activation: sigmoid(+-beta) is exactly 1 / 0
    gate: float          # in_proj_z pre-activation: silu(gate) == gate

    @property
    def key_hot(self) -> float:
        return self.key_gain - self.key_offset


MIXER_DRIVES = {
    torch.float32: MixerDrive(key_gain=100.0, key_offset=50.0, value_gain=1000.0,
                              value_offset=200.0, beta=200.0, gate=32.0),
    torch.bfloat16: MixerDrive(key_gain=100.0, key_offset=50.0, value_gain=1000.0,
                               value_offset=200.0, beta=200.0, gate=32.0),
}


def drive_for(dtype: torch.dtype) -> MixerDrive:
    return MIXER_DRIVES.get(dtype, MIXER_DRIVES[torch.float32])


@dataclass(frozen=True)
class MixerCost:
    """What a token-mixer gadget takes in one layer."""

    gadget: str
    layer_kind: str
    heads: int
    dims_written: int
    mlp_units: int = 0

    def __str__(self) -> str:
        return (f"{self.gadget}: {self.heads} {self.layer_kind} head(s), "
                f"{self.dims_written} residual dims written, {self.mlp_units} MLP units")


# -- conditions and addresses ----------------------------------------------------------------
@dataclass(frozen=True)
class When:
    """A condition on the current token: `group` holds one of `values` (1 or 0)."""

    group: Group
    values: tuple[int, ...]

    def form(self) -> Form:
        return entries(self.group, self.values)

    def shortfall(self) -> int:
        """How far below 1 `form` can fall: 1 for a one-hot group (it is 0 or 1), the number
        of bits a binary group's cube fixes (`cube_form` goes down to `1 - len(cube)`)."""
        if self.group.kind != BINARY:
            return 1
        cube = disjoint_cubes(set(self.values), range(self.group.count), self.group.size)[0]
        return max(len(cube), 1)


def when(group: Group, *values: int) -> When:
    """`group` holds one of `values` (for a bit `[is0, is1]`: `when(bit, 1)`)."""
    return When(group, tuple(values))


@dataclass(frozen=True)
class SlotAddress:
    """Which slot a token addresses: a function of one-hot groups, each read at a conv tap.

    `slot_of` maps a tuple of values (one per group) to a slot in `0..127`.  With one group
    several values may share a slot; with several groups each slot has at most one tuple (the
    key is an AND of the groups' entries).  No groups: every token addresses `slot_of[()]`."""

    groups: tuple[Group, ...]
    slot_of: Mapping[tuple[int, ...], int]
    taps: tuple[int, ...] = ()

    def __post_init__(self):
        taps = self.taps or (0,) * len(self.groups)
        object.__setattr__(self, "taps", tuple(taps))
        if len(self.taps) != len(self.groups):
            raise ValueError("one tap per address group")
        if any(not 0 <= tap < CONV_KERNEL for tap in self.taps):
            raise ValueError(f"taps must be in 0..{CONV_KERNEL - 1}")
        if len(self.groups) > 1 and len(set(self.slot_of.values())) != len(self.slot_of):
            raise ValueError("an address of several groups needs one tuple per slot")

    @property
    def slots(self) -> list[int]:
        return sorted(set(self.slot_of.values()))

    def forms(self, drive: MixerDrive) -> dict[int, list[tuple[int, Form]]]:
        """Per slot: the (tap, pre-activation) parts of its key channel."""
        per_slot: dict[int, list[tuple[int, Form]]] = {}
        if not self.groups:
            return {slot: [(0, const(drive.key_hot))] for slot in self.slots}
        count = len(self.groups)
        for values, slot in sorted(self.slot_of.items()):
            parts = per_slot.setdefault(slot, [])
            for group, tap, value in zip(self.groups, self.taps, values):
                parts.append((tap, is_value(group, value) * drive.key_gain))
        for slot, parts in per_slot.items():
            parts.append((self.taps[0],
                          const(-drive.key_gain * (count - 1) - drive.key_offset)))
        return per_slot


def address(group: Group, slot_of: Callable[[int], int] | None = None, tap: int = 0
            ) -> SlotAddress:
    """Slot `slot_of(v)` (default `v`) when the group holds `v`."""
    slot_of = slot_of or (lambda value: value)
    return SlotAddress((group,), {(v,): slot_of(v) for v in range(group.count)}, (tap,))


def pair_address(first: Group, second: Group,
                 slot_of: Callable[[int, int], int] | None = None,
                 taps: tuple[int, int] = (0, 0)) -> SlotAddress:
    """Slot `slot_of(a, b)` (default `a * second.count + b`) for the pair of groups."""
    slot_of = slot_of or (lambda a, b: a * second.count + b)
    return SlotAddress((first, second),
                       {(a, b): slot_of(a, b) for a in range(first.count)
                        for b in range(second.count)}, taps)


def fixed_address(slot: int = 0) -> SlotAddress:
    """Every token addresses `slot` (a latch: one slot, the latest write wins)."""
    return SlotAddress((), {(): slot})


# -- values ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValuePart:
    """A one-hot group of the stored value, read at a conv tap, at `offset` in its head."""

    group: Group
    tap: int
    head: int          # which of the memory's heads (0-based)
    offset: int        # first value dim in that head


def flatten_groups(items: Iterable[Union[Live, tuple[Live, int]]]) -> list[tuple[Group, int]]:
    """`(group, tap)` for every one-hot group of `items` (words give their digits; an item
    is a group/word, or a `(group/word, tap)` pair; the tap defaults to 0)."""
    parts = []
    for item in items:
        target, tap = item if isinstance(item, tuple) else (item, 0)
        for group in (target.digits if isinstance(target, Word) else (target,)):
            parts.append((group, tap))
    return parts


def pack_values(items: Sequence[Union[Live, tuple[Live, int]]], head_dim: int = 128
                ) -> list[ValuePart]:
    """Lay the value groups out in heads of `head_dim` dims, in order, never splitting one."""
    packed, head, offset = [], 0, 0
    for group, tap in flatten_groups(items):
        if group.count > head_dim:
            raise ValueError(f"{group.name}: {group.count} values do not fit a {head_dim}-dim "
                             "head")
        if offset + group.count > head_dim:
            head, offset = head + 1, 0
        packed.append(ValuePart(group, tap, head, offset))
        offset += group.count
    return packed


# -- the memory -----------------------------------------------------------------------------
@dataclass
class Memory:
    """A key->value memory in Gated DeltaNet heads (see the module doc).

    - `address`: where a write goes;
    - `value`: the groups (or words) stored, each optionally `(group, tap)`; packed into
      `heads` heads of 128 dims;
    - `write_when`: conditions that must all hold on the current token for a write;
    - `init`: a bit group whose `1` marks the init tokens (every slot is written there).
    """

    name: str
    address: SlotAddress
    value: Sequence[Union[Live, tuple[Live, int]]]
    write_when: Sequence[When] = ()
    init: Group | None = None
    head_dim: int = 128
    replicas: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)

    def __post_init__(self):
        self.parts = pack_values(self.value, self.head_dim)
        self.heads = self.parts[-1].head + 1 if self.parts else 0
        if not self.parts:
            raise ValueError(f"{self.name}: a memory needs a value")
        if max(self.address.slots) >= self.head_dim or min(self.address.slots) < 0:
            raise ValueError(f"{self.name}: slots must be in 0..{self.head_dim - 1}")

    def output_shape(self) -> list[int]:
        """Sizes of the groups a read port writes, in value order."""
        return [part.group.count for part in self.parts]

    def cost(self, reads: int = 1) -> MixerCost:
        """Heads and residual dims of `reads` replicas (each with its own read port), the
        dims counted for one-hot outputs (a value a dim); binary outputs take fewer, and
        `install` reports the dims of the groups it is given."""
        return MixerCost(self.name, LINEAR_ATTENTION, self.heads * reads,
                         reads * sum(self.output_shape()))

    def install(self, model, layer: int, heads: Sequence[int], rms: float,
                query: SlotAddress | None, outputs: Sequence[Live] | None = None,
                out_scale: float | None = None) -> MixerCost:
        """Add one replica into value heads `heads` of decoder layer `layer`.

        `rms` is the rms of that layer's input (the norm ledger).  `query` and `outputs` make
        the replica's read port (`None`: write-only); `outputs` are groups/words matching the
        value groups one for one, zero until this layer, and get one hot entry of their own
        scale (or `out_scale`) on every token."""
        attn = _linear_attn(model, layer)
        if attn.head_v_dim != self.head_dim or attn.head_k_dim <= max(
                self.address.slots + (query.slots if query is not None else [])):
            raise ValueError(f"{self.name}: needs DeltaNet heads of {self.head_dim} value dims "
                             f"and more key dims than its highest slot")
        if len(heads) != self.heads:
            raise ValueError(f"{self.name}: needs {self.heads} head(s), got {len(heads)}")
        drive = drive_for(attn.in_proj_qkv.weight.dtype)
        out_groups = flatten_groups(outputs or [])
        # A read port gives back each stored group, or its first entries: a store the prompt
        # alone writes holds a staged byte's whole hex digit even where the element is
        # narrower (a 3-bit digit), and the entries past the element's values are never hot.
        counts = [g.count for g, _ in out_groups]
        if query is not None and (len(counts) != len(self.output_shape()) or any(
                out > stored for out, stored in zip(counts, self.output_shape()))):
            raise ValueError(f"{self.name}: outputs {counts} do not match the value groups "
                             f"{self.output_shape()}")
        head = HeadWriter(attn, rms, drive)
        for index, value_head in enumerate(heads):
            head.claim(value_head, self.name)
            key_head = head.key_head(value_head)
            for slot, parts in self.address.forms(drive).items():
                init = self._init_form(drive)
                head.channel("k", key_head, slot, parts, extra=init)
            if query is not None:
                for slot, parts in query.forms(drive).items():
                    head.channel("q", key_head, slot, parts)
            mine = [part for part in self.parts if part.head == index]
            for part in mine:
                for entry in range(part.group.count):
                    form = is_value(part.group, entry) * drive.value_gain
                    head.channel("v", value_head, part.offset + entry,
                                 [(part.tap, form), (part.tap, const(-drive.value_offset))])
            head.beta(value_head, self._beta_form(drive))
            if query is None:
                continue
            # The read-out's two factors as the layer will round them in its dtype: the
            # normalised hot entry, and z = in_proj_z's weight times the normalised ONE dim.
            normalised = head.rounded(math.sqrt(self.head_dim / len(mine)))
            gate = head.rounded(head.rounded(drive.gate * rms) * head.rounded(1.0 / rms))
            for part in mine:
                group = out_groups[self.parts.index(part)][0]
                scale = out_scale if out_scale is not None else group.scale
                for entry in range(min(part.group.count, group.count)):
                    head.read_out(value_head, part.offset + entry,
                                  put(group, entry, scale / group.scale / (normalised * gate)))
        self.replicas.append((layer, tuple(heads)))
        dims = sum(g.size for g, _ in out_groups) if query is not None else 0
        return MixerCost(self.name, LINEAR_ATTENTION, len(heads), dims)

    def _init_form(self, drive: MixerDrive) -> Form:
        """On an init token, lift every slot's key channel by the most its address terms can
        fall short of hot: 1 for a one-hot group, `size` for a binary group (`is_value` of a
        binary group goes down to `1 - size`), so that every slot is written whatever the
        address holds; `_beta_form` does the same for the write conditions."""
        if self.init is None:
            return Form()
        shortfall = sum(group.size if group.kind == BINARY else 1
                        for group in self.address.groups)
        return is_value(self.init, 1) * (drive.key_gain * max(shortfall, 1))

    def _beta_form(self, drive: MixerDrive) -> Form:
        conditions = list(self.write_when)
        form = Form()
        for condition in conditions:
            form = form + condition.form() * (2 * drive.beta)
        form = form + const(-drive.beta * (2 * len(conditions) - 1))
        if self.init is not None:       # lift the worst case of every condition to beta
            shortfall = sum(condition.shortfall() for condition in conditions)
            form = form + is_value(self.init, 1) * (2 * drive.beta * max(shortfall, 1))
        return form


def latch(name: str, value: Sequence[Union[Live, tuple[Live, int]]],
          write_when: Sequence[When], init: Group | None = None) -> Memory:
    """A one-slot memory: reads give the value of the latest token that met `write_when`
    (that token included).  Install it with `query=fixed_address()`."""
    return Memory(name, fixed_address(), value, write_when, init)


# -- writing into one Gated DeltaNet ----------------------------------------------------------
def _linear_attn(model, layer: int):
    decoder = model.model.layers[layer]
    if not hasattr(decoder, "linear_attn"):
        raise ValueError(f"layer {layer} is not a linear_attention layer")
    return decoder.linear_attn


class HeadWriter:
    """Sets the weights of one DeltaNet's channels; `rms` is folded into input weights.

    Used by `Memory` and by other mixer emitters: `claim` a value head, write `channel`s
    (q/k/v, one tap each), `beta`, and `read_out` (z and out_proj).  A read-out factor is
    exact in bf16 when computed from `rounded` values, as `Memory.install` does."""

    def __init__(self, attn, rms: float, drive: MixerDrive):
        self.attn, self.rms, self.drive = attn, rms, drive
        self.key_dim = attn.head_k_dim
        self.value_dim = attn.head_v_dim
        self.ratio = attn.num_v_heads // attn.num_k_heads
        if not torch.all(attn.norm.weight == 1):
            raise ValueError("the gated norm weight must be 1 (shared by every head)")
        if attn.A_log.float().exp().max() != 0:
            raise ValueError("memories need a decay of exactly 1 (A_log = -1e4)")

    def rounded(self, number: float) -> float:
        """`number` as the layer's dtype holds it."""
        return float(torch.tensor(number, dtype=torch.float64).to(self.attn.out_proj.weight.dtype))

    def key_head(self, value_head: int) -> int:
        return value_head // self.ratio

    def _row(self, kind: str, head: int, index: int) -> int:
        if kind == "q":
            return head * self.key_dim + index
        if kind == "k":
            return self.attn.key_dim + head * self.key_dim + index
        return 2 * self.attn.key_dim + head * self.value_dim + index

    def claim(self, value_head: int, name: str) -> None:
        """Refuse a value head something else already uses."""
        attn = self.attn
        rows = slice(value_head * self.value_dim, (value_head + 1) * self.value_dim)
        values = slice(2 * attn.key_dim + rows.start, 2 * attn.key_dim + rows.stop)
        used = (attn.in_proj_qkv.weight[values].any() or attn.in_proj_z.weight[rows].any()
                or attn.in_proj_b.weight[value_head].any() or attn.out_proj.weight[:, rows].any())
        if used:
            raise ValueError(f"{name}: value head {value_head} is already in use")

    def channel(self, kind: str, head: int, index: int, parts: list[tuple[int, Form]],
                extra: Form | None = None) -> None:
        """Channel `index` of q/k/v head `head`: silu of the parts, each read at its tap."""
        taps = {tap for tap, _ in parts}
        if len(taps) > 1:
            # One conv channel reads one tap; an AND over tokens uses one tap per group
            # only when every group shares it.
            raise ValueError("an address read at several taps is not supported; "
                             "latch the earlier field first")
        tap = taps.pop()
        form = Form()
        for _, part in parts:
            form = form + part
        if extra:
            form = form + extra
        row = self._row(kind, head, index)
        weight = self.attn.in_proj_qkv.weight
        wanted = torch.zeros(weight.shape[1], dtype=torch.float64)
        for dim, coef in form.items():
            wanted[dim] += coef * self.rms
        wanted = wanted.to(weight.dtype)
        conv = self.attn.conv1d.weight
        taps_wanted = torch.zeros(CONV_KERNEL, dtype=conv.dtype)
        taps_wanted[CONV_KERNEL - 1 - tap] = 1.0
        if weight[row].any():
            # A key head shared by several value heads (GQA) is written once per value head.
            if kind == "v" or not (torch.equal(weight[row], wanted)
                                   and torch.equal(conv[row, 0], taps_wanted)):
                raise ValueError(f"{kind} channel {index} of head {head} is already in use")
            return
        with torch.no_grad():
            weight[row] = wanted
            conv[row, 0] = taps_wanted

    def beta(self, value_head: int, form: Form) -> None:
        weight = self.attn.in_proj_b.weight
        with torch.no_grad():
            for dim, coef in form.items():
                weight[value_head, dim] = float(weight[value_head, dim]) + coef * self.rms

    def read_out(self, value_head: int, index: int, output: Mapping[int, float]) -> None:
        """Value dim `index` of the head reaches each residual dim `d` of `output` times
        `output[d]` (one dim for a one-hot group's entry, every dim for a binary one's)."""
        column = value_head * self.value_dim + index
        with torch.no_grad():
            self.attn.in_proj_z.weight[column, ONE_DIM] = self.drive.gate * self.rms
            for residual_dim, factor in output.items():
                self.attn.out_proj.weight[residual_dim, column] = factor


