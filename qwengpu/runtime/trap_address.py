"""The address a faulting access used, told as the kernel formed it (docs/ptx.md, "Traps").

The loader's checks change an address before the machine sees it (`qwengpu.ptx.select_memory`):
the range check ORs ones into the low word of an address past 2^32 bytes or below 0, the
alignment check sets bit 0 of an 8- or 16-byte access's address that is not a multiple of its
size, and a 16-bit load clears the bit that picks its halfword.  So the machine's faulting
address (register a + imm of the `ld`/`st`) is not the one the kernel computed.  Each such
access's program slot says where that one is read (`FormedAddressSlots`): operand a of an
instruction the lane ran just before, for the low word and for the high word.  The trace holds
every register write, so replaying the warp's records up to the trap gives what those operands
held the last time the lane ran them: the address the kernel formed, 64 bits and signed.
"""

from __future__ import annotations

from qwengpu.isa import MASK32, RZ, Trap
from qwengpu.ptx.program import FormedAddressSlots


def formed_address(instructions: list, records: list[dict], trap_index: int, warp: int,
                   lane: int, formed: FormedAddressSlots) -> int | None:
    """The 64-bit address (signed) the kernel formed for the access that trapped in record
    `trap_index`, from the records before it; None if the lane never ran the instructions
    that read it."""
    wanted = {formed.low_pc} | ({formed.high_pc} if formed.high_pc is not None else set())
    registers: dict[int, int] = {}
    seen: dict[int, int] = {}
    for record in records[:trap_index]:
        if record["warp"] != warp:
            continue
        pc = record["pc"]
        if pc in wanted and record["exec"] >> lane & 1 and pc < len(instructions):
            source = instructions[pc].a
            seen[pc] = 0 if source == RZ else registers.get(source, 0)
        if record.get("rwen", 0) >> lane & 1:
            registers[record["rd"]] = record[f"rval{lane}"]
    if formed.low_pc not in seen:
        return None
    high = seen.get(formed.high_pc, 0) if formed.high_pc is not None else formed.high_value
    value = ((high & MASK32) << 32) | (seen[formed.low_pc] & MASK32)
    return value - (1 << 64) if value >> 63 else value


def fault_detail(code: int, machine_address: int, formed: int | None, size_bytes: int,
                 memory_words: int) -> str:
    """`: byte address ...` for a range or alignment trap; `formed` (None: unknown) is the
    kernel's address, `machine_address` the one the faulting instruction used."""
    if code == Trap.MISALIGNED:
        if formed is None:
            return f": byte address {machine_address} is not a multiple of 4"
        article = "an" if size_bytes == 8 else "a"
        return (f": byte address {formed} is not a multiple of {size_bytes} ({article} "
                f"{size_bytes}-byte access)")
    if formed is not None and formed < 0:
        return f": byte address {formed} is below 0"
    if formed is not None and formed >= 1 << 32:
        high, low = divmod(formed, 1 << 32)
        return (f": byte address {formed} ({high} x 2^32 + {low}) is past 2^32, where "
                "QwenGPU's 32-bit byte addresses end")
    return (f": byte address {machine_address} is word {machine_address // 4}, past the "
            f"{memory_words} words of memory")
