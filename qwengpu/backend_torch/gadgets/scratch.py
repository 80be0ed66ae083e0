"""The scratch: DeltaNet heads that hold the record being written (and the staging bytes of a
prompt) so that the commit and the step logic can read every field at once.

A scratch head is keyed by slot (one key per slot: a field's byte, or a staging byte); each
slot holds its regions of values — (source group, size, value group): the token's byte
digits copied into the value the slot stands for — side by side in the head's 128 value
dims.  A token that names a slot (a field or init token, a stage token) writes its regions
(beta 1 on that slot's key), `<bos>` writes every slot (the scratch starts clean), any other
token writes nothing; one query over all keys reads every slot at once, scaled back by the
head's regions (`normalised`).  docs/compiler.md, "Execution model", says why the record
goes through the scratch.
"""

from __future__ import annotations

import math
from typing import Sequence

from qwengpu.backend_torch.gadgets.core import Form, const, put
from qwengpu.backend_torch.gadgets.memory import HeadWriter, drive_for
from qwengpu.backend_torch.residual import Group

HEAD_DIM = 128


def scratch(attn, heads: Sequence[int], rms: float, name: str, slot_group: Group,
            bos: Group, slots_per_head: Sequence, groups: dict[str, Group]) -> None:
    """Install a scratch into value heads `heads` of one Gated DeltaNet (`attn`): per head,
    its slots and their (source, size, value) regions (`slots_per_head`); `slot_group`
    names the slot a token writes, `bos` is `<bos>`'s flag group."""
    drive = drive_for(attn.in_proj_qkv.weight.dtype)
    writer = HeadWriter(attn, rms, drive)
    beta = drive.beta
    for head, slots in zip(heads, slots_per_head):
        writer.claim(head, name)
        key_head = writer.key_head(head)
        offset, regions_in_head = 0, sum(len(regions) for _, regions in slots)
        normalised = math.sqrt(HEAD_DIM / regions_in_head)
        beta_form = const(-beta) + Form({bos.dim(1): 2 * beta})
        for key, (slot, regions) in enumerate(slots):
            writer.channel("k", key_head, key,
                           [(0, Form({slot_group.dim(slot): drive.key_gain})
                             + const(-drive.key_offset) + Form({bos.dim(1): drive.key_gain}))])
            writer.channel("q", key_head, key, [(0, const(drive.key_hot))])
            beta_form = beta_form + Form({slot_group.dim(slot): 2 * beta})
            selected = Form({slot_group.dim(slot): drive.value_gain})
            for source, size, value in regions:
                src, target = groups[source], groups[value]
                for entry in range(size):
                    form = selected + Form({src.dim(entry): drive.value_gain}) + \
                        const(-drive.value_gain - drive.value_offset)
                    if entry == 0:
                        form = form + Form({bos.dim(1): drive.value_gain})
                    writer.channel("v", head, offset + entry, [(0, form)])
                    writer.read_out(head, offset + entry,
                                    put(target, entry, 1.0 / (normalised * drive.gate)))
                offset += size
        writer.beta(head, beta_form)
