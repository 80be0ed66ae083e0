"""The layer-level plan of a machine: residual values and the operations that compute them.

`build_plan(graph, protocol)` turns a digit-level graph (after `DEFAULT_PIPELINE`) into the
operations of one pass of the compiled model, following the execution model of
docs/compiler.md (bottom to top):

1. **Embedding** values, set by every token (`tok.*`, see `EMBEDDING`): the record-scratch
   slot of a field/init token, the staging slot of a stage token, the token's byte as two hex
   digits, the token's *mode* (other / closes a record / `<bos>` / commit of element `e` /
   commit of write port k), the flat index a commit token names, the record position of
   the next token to emit, and (after `fold-lanes`) `tok.lane`, the lane of the field in
   that position: the graph's `next_lane`.
2. **Scratch** (mixer of layer 0): the record scratch and the staging scratch, DeltaNet heads
   keyed by slot whose read-out is every slot at once (`scratch` ops).
3. **Commit**: the write cones of the graph, computed from the record fields read back from
   the scratch (`field_input` digits after `cut-at-fields`, or field digits of an uncut
   graph) (`c%N` values), reads of static state, then per written store the merge of its
   write ports (port k on the record's port-k token, `port_mode`) with the prompt's commit
   tokens (`wr.E.idx`, `wr.E.d<i>`, `wr.E.en`).
4. **State**: one `memory` op per read port (a replica: every replica is written with the
   same key, value and enable); static state is written by commit tokens only.
5. **Step logic** (`s%N` values): the cones of the record fields and of `stop`.
6. **Emission**: `next.kind` (the next record position, or end of launch), `next.lo`,
   `next.hi`.

Values are one-hot groups indexed by the raw value (a `u3` digit has 8 dims, a bit 2) when
planned; `encodings.choose_encodings` then makes binary (one signed dim per bit) every value
whose readers allow it.  The exception: the analog column sums of a multiplier (`mul_column`): one dim holding the number
times `analog_scale`.
Every op is given its inputs as *operands*: `("v", name)` for a value, `("c", k)` for a
constant.  `schedule.py` places the ops into layers; `emit.py` writes their weights.
"""

from __future__ import annotations

from qwengpu.backend_torch.ops import (ANALOG_SCALE, HEAD_DIM, MODE_BOS, MODE_CLOSE, MODE_COMMIT,
                                       MODE_OTHER, NORM_ANCHOR, Choose, DigitWork, Function,
                                       MemoryWork, Op, Plan, ScratchWork, SharedLuts,
                                       operand_values)
from qwengpu.trace.protocol import TraceProtocol
from qwengpu.backend_torch.stores import Store, commit_target, const_index, index_digits, \
    plan_stores, store_of
from qwengpu.errors import CapacityError, HdlError
from qwengpu.ir.check_trace_carried import check_trace_carried, field_values
from qwengpu.ir.digits import ANALOG_OPS, DIGIT_OPS
from qwengpu.ir import Graph

def _product(domains):
    import itertools
    total = 1
    for d in domains:
        total *= len(d)
    if total > 1 << 16:
        return [()]
    return itertools.product(*domains)


def _digit_bits(width: int, digit: int) -> int:
    return max(0, min(4, width - 4 * digit))


def build_plan(graph: Graph, protocol: TraceProtocol, estimate: bool = False) -> Plan:
    """The plan of one pass (see the module doc); `HdlError` for writes not carried.

    `estimate=True` plans a spec whose writes are not all carried, for figures only: a
    non-carried state value in a write cone is taken as if the record carried it (an extra
    embedding value `uncarried.*`).  Such a plan cannot be built into weights."""
    if not estimate:
        check_trace_carried(graph)
    plan = Plan(protocol, graph)
    plan.estimate = estimate
    plan.stores = plan_stores(graph, protocol, MODE_COMMIT)
    _embedding(plan)
    builder = _Builder(plan)
    builder.scratch()
    builder.commit()
    if protocol.optional:
        builder.next_position()
    builder.step()
    builder.emission()
    _share_luts(plan)
    return plan


def _share_luts(plan: Plan) -> None:
    """Luts of one region with the same operands become one op whose AND units write every
    output (a multiplier's low and high partial-product digits)."""
    members: dict[tuple, list[int]] = {}
    for position, op in enumerate(plan.ops):
        if isinstance(op.work, DigitWork) and op.work.operator == "lut":
            members.setdefault((op.region, op.work.operands), []).append(position)
    drop, merged = set(), {}
    for (region, operands), positions in members.items():
        if len(positions) < 2:
            continue
        ops = [plan.ops[p] for p in positions]
        merged[positions[0]] = Op("+".join(op.name for op in ops),
                                  SharedLuts(operands, tuple(op.work.node for op in ops)),
                                  ops[0].inputs, [op.outputs[0] for op in ops], region,
                                  ops[0].loc)
        drop.update(positions[1:])
    plan.ops = [merged.get(p, op) for p, op in enumerate(plan.ops) if p not in drop]


def port_mode(plan: Plan, port: int) -> int:
    """`tok.mode` of the token whose pass commits write port `port`: the record's close for
    port 0, the port token for the others (modes after the stores' commit modes)."""
    return MODE_CLOSE if port == 0 else MODE_COMMIT + len(plan.stores) + port - 1


def _embedding(plan: Plan) -> None:
    p = plan.protocol
    sizes = {"tok.rslot": len(p.record_slots) + 1, "tok.sslot": p.stage_bytes + 1,
             "tok.lo": 16, "tok.hi": 16, "tok.bos": 2,
             "tok.mode": MODE_COMMIT + len(plan.stores) + p.write_ports - 1,
             "tok.cidx": max([s.size for s in plan.stores] + [1]),
             "tok.next": p.tokens_per_record}
    lanes = field_lanes(plan.graph)
    if lanes and not p.optional:       # else computed: `_Builder.next_position`
        sizes["tok.lane"] = max(lanes.values()) + 1
    for name, size in sizes.items():
        plan.embedding.append(plan.value(name, size))


def field_lanes(graph: Graph) -> dict[str, int]:
    """The lane of each record field that `fold-lanes` folded (its `next_lane` binding)."""
    return {n.state: n.lane for _, n in graph.items() if n.op == "field" and n.lane is not None}


def position_lane(protocol: TraceProtocol, lanes: dict[str, int], position: int) -> int:
    """The lane of the field(s) at record position `position` (0: none, a port token)."""
    if position >= len(protocol.record_slots):
        return 0
    names = [protocol.record_slots[position][0], protocol.slot_pair.get(position)]
    return max((lanes[name] for name in names if name in lanes), default=0)


def embedding_values(plan: Plan, token_id: int) -> dict[str, int]:
    """What each embedding value holds on token `token_id` (see `_embedding`)."""
    protocol = plan.protocol
    token = protocol.describe(token_id)
    held = {"tok.rslot": len(protocol.record_slots), "tok.sslot": protocol.stage_bytes,
            "tok.lo": 0, "tok.hi": 0, "tok.bos": 0, "tok.mode": MODE_OTHER, "tok.cidx": 0,
            "tok.next": 0}
    if token.kind in ("field", "init"):
        held["tok.rslot"] = token.slot
    if token.kind in ("field", "port"):
        held["tok.next"] = protocol.following_slot(token_id)
    if token.closes_record:
        held["tok.mode"] = port_mode(plan, 0)
    if token.kind == "port":
        held["tok.mode"] = port_mode(plan, token.port)
    if token.kind == "stage":
        held["tok.sslot"] = token.byte
    if token.kind in ("field", "stage"):
        held["tok.lo"], held["tok.hi"] = token.value & 15, token.value >> 4
    if token.id == protocol.bos_id:
        held["tok.bos"], held["tok.mode"] = 1, MODE_BOS
    if token.kind == "commit":
        store, flat = commit_target(plan.stores, protocol.state_by_name[token.name],
                                    token.index)
        held["tok.mode"], held["tok.cidx"] = store.mode, flat
    if NORM_ANCHOR in plan.values:
        held[NORM_ANCHOR] = 1
    if "tok.lane" in plan.values:
        # the lane of the field emitted next; 0 before a port token or the end of launch
        held["tok.lane"] = position_lane(protocol, field_lanes(plan.graph), held["tok.next"])
    return held


class _Builder:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.graph = plan.graph
        self.protocol = plan.protocol
        self.carried = field_values(self.graph)
        self.written = {n.state for _, n in self.graph.items() if n.op == "write"}
        self.field_digit: dict[int, str] = {}          # field-digit node -> scratch value
        self.field_input_digit: dict[tuple[str, int], str] = {}   # (field, digit) -> same
        self.stage_digit: dict[tuple[int, int], str] = {}
        self.ports: dict[tuple, list[str]] = {}        # (region, state, index) -> outputs
        self.memo: dict[tuple[str, int], tuple] = {}
        self.writes_of: dict[str, list[tuple[int, list, tuple]]] = {}   # store -> ports

    # -- the scratch (layer 0) ------------------------------------------------------------
    def scratch(self) -> None:
        plan, p = self.plan, self.protocol
        fields = {n.state: n for _, n in self.graph.items() if n.op == "field"}
        lanes = field_lanes(self.graph)
        for slot, second in p.slot_pair.items():
            first = p.record_slots[slot][0]
            if first in lanes and second in lanes and lanes[first] != lanes[second]:
                raise HdlError(f"record fields {first} and {second} share a token, but "
                               f"fold-lanes computes them on lanes {lanes[first]} and "
                               f"{lanes[second]} (one token is emitted on one lane)",
                               fields[second].loc if second in fields else None)
        record_slots = []
        for slot in range(len(p.record_slots)):
            regions = []
            for half, source in ((0, "tok.lo"), (1, "tok.hi")):
                place = p.slot_digits(slot)[half]      # (field, digit) of this token digit
                if place is None:
                    continue
                name, digit = place
                bits = _digit_bits(p.field_by_name[name].width, digit)
                value = plan.value(f"scr.{name}.b{digit // 2}.{'hi' if digit % 2 else 'lo'}",
                                   1 << bits)
                regions.append((source, 1 << bits, value))
                self.field_input_digit[(name, digit)] = value
                node = fields.get(name)
                if node is not None and node.lane is None and digit < len(node.args):
                    self.field_digit.setdefault(node.args[digit], value)   # every lane's
            record_slots.append((slot, regions))
        self._scratch_op("record_scratch", "tok.rslot", record_slots)
        stage_slots = []
        for byte in range(p.stage_bytes):
            regions = []
            for half, source in ((0, "tok.lo"), (1, "tok.hi")):
                value = plan.value(f"stage.b{byte}.{'lo' if half == 0 else 'hi'}", 16)
                regions.append((source, 16, value))
                self.stage_digit[(byte, half)] = value
            stage_slots.append((byte, regions))
        self._scratch_op("staging_scratch", "tok.sslot", stage_slots)

    def _scratch_op(self, name: str, slot_value: str, slots) -> None:
        heads, current, used = [], [], 0
        for slot, regions in slots:
            dims = sum(size for _, size, _ in regions)
            if current and used + dims > HEAD_DIM:
                heads.append(current)
                current, used = [], 0
            current.append((slot, regions))
            used += dims
        if current:
            heads.append(current)
        outputs = [value for _, regions in slots for _, _, value in regions]
        self.plan.add(Op(name, ScratchWork(slot_value, tuple(heads)),
                         [slot_value, "tok.lo", "tok.hi", "tok.bos"], outputs, "scratch",
                         heads=len(heads)))

    # -- values of graph nodes ----------------------------------------------------------------
    def operand(self, region: str, node_id: int) -> tuple:
        """The operand computing node `node_id` in `region` (commit: cut at field digits)."""
        key = (region, node_id)
        if key in self.memo:
            return self.memo[key]
        node = self.graph.node(node_id)
        if node.op == "const":
            result = ("c", node.value)
        elif node.op == "field_input":
            if region != "commit" or node.low % 4 or \
                    (node.state, node.low // 4) not in self.field_input_digit:
                raise HdlError(f"field input {node.state} bit {node.low} outside the commit "
                               "region or without a scratch slot", node.loc)
            result = ("v", self.field_input_digit[(node.state, node.low // 4)])
        elif region == "commit" and node_id in self.field_digit:
            result = ("v", self.field_digit[node_id])
        elif region == "commit" and node_id in self.carried:
            raise HdlError(f"record field digit %{node_id} has no scratch slot", node.loc)
        elif region == "commit" and node.op in ("register", "read") and \
                node.state in self.written:
            name = self.plan.value(f"uncarried.{node.state}.{node_id}", 1 << node.width)
            self.plan.embedding.append(name)
            result = ("v", name)
        elif node.op == "next_lane":
            if region != "step":
                raise HdlError("next_lane outside the step logic", node.loc)
            result = ("v", "next.lane" if self.protocol.optional else "tok.lane")
        elif node.op in ("register", "read"):
            outputs = self.state_port(region, node)
            result = ("v", outputs[node.low // 4])
        elif node.op in DIGIT_OPS:
            operands = [self.operand(region, a) for a in node.args]
            name = f"{region[0]}%{node_id}"
            if node.op in ANALOG_OPS:      # one dim holding the number (mul_column, ...)
                self.plan.value(name, 1, self.graph.domain(node_id), node.loc, ANALOG_SCALE)
            else:
                self.plan.value(name, 1 << node.width, self.graph.domain(node_id), node.loc)
            self.plan.add(Op(name, DigitWork(node.op, node, tuple(operands)),
                             operand_values(operands), [name], region, node.loc))
            result = ("v", name)
        else:
            raise HdlError(f"{node.op} left in the digit-level graph (run the default "
                           "passes first)", node.loc)
        self.memo[key] = result
        return result

    def store_and_index(self, region: str, node, args) -> tuple[Store, list, tuple]:
        """The store a read or write addresses, and its local index operands and groups."""
        element = self.protocol.state_by_name[node.state]
        if element.kind == "register":
            return store_of(self.plan.stores, element.name, ()), [], ()
        dims = index_digits(node, args)
        bank_dims = next(s for s in self.plan.stores if s.element == element.name).bank_dims
        bank = tuple(const_index(self.graph, dims[d]) for d in bank_dims)
        store = store_of(self.plan.stores, element.name, bank)
        local = [d for i, d in enumerate(dims) if i not in bank_dims]
        operands = [self.operand(region, a) for digits in local for a in digits]
        return store, operands, tuple(len(digits) for digits in local)

    def state_port(self, region: str, node) -> list[str]:
        """A read port (one memory replica) of the store `node` reads."""
        store, operands, groups = self.store_and_index(region, node, node.args)
        name = store.name
        key = (region, name, tuple(operands))
        if key in self.ports:
            return self.ports[key]
        query = ("fixed", 0)
        if store.kind == "memory":
            query = ("value", self.flat_index(region, store, groups, operands, node.loc))
        width = store.width
        tag = f"{region[0]}.{name}.r{len([k for k in self.ports if k[1] == name])}"
        outputs = [self.plan.value(f"{tag}.d{d}", 1 << _digit_bits(width, d), loc=node.loc)
                   for d in range(-(-width // 4))]
        writes, inputs = self.memory_writes(store)
        inputs = inputs + ([query[1]] if query[0] == "value" else [])
        heads = -(-sum(self.plan.values[v].size for v in outputs) // HEAD_DIM)
        # slots the reads need: the elements, and the spare out-of-range reads use (if any)
        slots = self.plan.values[query[1]].size if query[0] == "value" else 1
        banks = -(-slots // HEAD_DIM)     # more slots than a head's keys: one head set a bank
        heads *= banks
        self.plan.add(Op(tag, MemoryWork(**writes, query=query, banks=banks), inputs, outputs,
                         "commit" if region == "commit" else "state", node.loc, heads=heads))
        self.ports[key] = outputs
        return outputs

    def flat_index(self, region: str, store: Store, groups, operands, loc,
                   tag: str = "") -> str:
        """A value holding the store's flat local index (or `size` when out of range);
        `tag` tells apart the indices of one store's write ports."""
        if len(operands) == 1 and operands[0][0] == "v" and \
                max(self.plan.values[operands[0][1]].domain) < store.size:
            return operands[0][1]
        shape, domains = store.shape, []
        for o in operands:
            domains.append((o[1],) if o[0] == "c" else self.plan.values[o[1]].domain)
        name = store.name

        class element:        # the names the code below reads
            size = store.size
        def flat(*digits):
            position, flat_index = 0, 0
            for size, count in zip(shape, groups):
                index = sum(d << (4 * k) for k, d in enumerate(digits[position:position + count]))
                position += count
                if index >= size:
                    return element.size
                flat_index = flat_index * size + index
            return flat_index
        spare = any(flat(*combo) == element.size for combo in _product(domains))
        out = f"{region[0]}.{name}.index{len(self.ports)}{tag}"
        self.plan.value(out, element.size + 1 if spare else element.size, loc=loc)
        self.plan.add(Op(out, Function(tuple(operands), flat),
                         operand_values(operands), [out], region, loc))
        return out

    # -- the commit region ----------------------------------------------------------------------
    def commit(self) -> None:
        """The write side of every written store.  A store's writes are its write ports in
        the spec's order (write sinks keep the order of the design's writes): port k is
        committed on the record's port-k token, so of two enabled writes to one element the
        later one wins, as in the interpreter."""
        for write_id, write in self.graph.items():
            if write.op != "write":
                continue
            store, operands, groups = self.store_and_index("commit", write, write.args)
            self.writes_of.setdefault(store.name, []).append((write_id, operands, groups))
        for store in self.plan.stores:
            ports = self.writes_of.get(store.name)
            if ports is None:
                continue
            if len(ports) > self.protocol.write_ports:
                raise RuntimeError(f"{store.name} has {len(ports)} write ports, the protocol "
                                   f"{self.protocol.write_ports} (qwengpu.trace.write_ports)")
            self.write_port(store, ports)

    def write_port(self, store: Store, ports: list[tuple[int, list, tuple]]) -> None:
        """`wr.S.d<i>`, `wr.S.idx`, `wr.S.en`: what `store` writes on each token: the staged
        value on its own commit token, 0 on `<bos>`, write port k on the pass of `port_mode(k)`
        (`ports`: per port, the write node and its local index operands and groups)."""
        plan, name, mode = self.plan, store.name, store.mode
        loc = self.graph.node(ports[0][0]).loc
        enables, data = [], []
        for write_id, _, _ in ports:
            write = self.graph.node(write_id)
            groups = write.groups or (1,) * len(write.args)
            enables.append(self.operand("commit", write.args[0]))
            data.append([self.operand("commit", a)
                         for a in write.args[len(write.args) - groups[-1]:]])
        later = [port_mode(plan, k) for k in range(1, len(ports))]
        for d in range(-(-store.width // 4)):
            out = plan.value(f"wr.{name}.d{d}", 1 << _digit_bits(store.width, d), loc=loc)
            cones = [digits[d] if d < len(digits) else ("c", 0) for digits in data]
            staged = ("v", self.stage_digit[(d // 2, d % 2)])
            arms = [((mode,), staged), ((MODE_BOS,), ("c", 0))]
            self._choose(out, arms + [((m,), cone) for m, cone in zip(later, cones[1:])],
                         cones[0], loc)
        indices = []
        if store.kind == "memory":
            tags = [f".p{k}" if len(ports) > 1 else "" for k in range(len(ports))]
            indices = [self.flat_index("commit", store, groups, operands,
                                       self.graph.node(write_id).loc, tag)
                       for tag, (write_id, operands, groups) in zip(tags, ports)]
            size = max([store.size] + [plan.values[i].size for i in indices])
            out = plan.value(f"wr.{name}.idx", size, loc=loc)
            arms = [((mode,), ("v", "tok.cidx"))]
            self._choose(out, arms + [((m,), ("v", i)) for m, i in zip(later, indices[1:])],
                         ("v", indices[0]), loc)
        # enable: its commit token, or a port's token when the port is enabled and in range
        port_enables = []
        for k, enable in enumerate(enables):
            out = plan.value(f"wr.{name}.en" + (f".p{k}" if len(ports) > 1 else ""), 2, loc=loc)
            index = [("v", indices[k])] if indices else []
            self._port_enable(out, store, k, [enable] + index, loc)
            port_enables.append(("v", out))
        if len(ports) > 1:
            out = plan.value(f"wr.{name}.en", 2, loc=loc)
            plan.add(Op(out, Function(tuple(port_enables), lambda *e: int(any(e))),
                        operand_values(port_enables), [out], "commit", loc))

    def _port_enable(self, out: str, store: Store, port: int, operands: list, loc) -> None:
        """`out` = 1 on the pass that commits `port` when its write is enabled (`operands`:
        enable, then the flat index of a memory) and in range; port 0 also on the store's
        prompt commit token."""
        commit, when, size = store.mode if port == 0 else None, port_mode(self.plan, port), \
            store.size

        def en(m, e, i=0):
            return int(m == commit or (m == when and e == 1 and i < size))
        operands = [("v", "tok.mode")] + operands
        self.plan.add(Op(out, Function(tuple(operands), en),
                         operand_values(operands), [out], "commit", loc))

    def _choose(self, out, arms, default, loc) -> None:
        operands = [("v", "tok.mode")] + [a for _, a in arms] + [default]
        self.plan.add(Op(out, Choose(("v", "tok.mode"), tuple(arms), default),
                         operand_values(operands), [out], "commit", loc))

    def memory_writes(self, store: Store) -> tuple[dict, list[str]]:
        """The write side every replica of `store` shares: key, value digits and enable (the
        fields of its `MemoryWork` but the query), and the values it reads."""
        name = store.name
        digits = -(-store.width // 4)
        if name in self.writes_of:
            values = [f"wr.{name}.d{d}" for d in range(digits)]
            address = ("value", f"wr.{name}.idx") if store.kind == "memory" else ("fixed", 0)
            when = [(f"wr.{name}.en", (1,))]
        else:
            values = [self.stage_digit[(d // 2, d % 2)] for d in range(digits)]
            address = ("value", "tok.cidx") if store.kind == "memory" else ("fixed", 0)
            when = [("tok.mode", (store.mode,))]
        inputs = values + [w for w, _ in when] + ["tok.bos"]
        if address[0] == "value":
            inputs.append(address[1])
        return ({"element": name, "address": address, "values": tuple(values),
                 "when": tuple(when), "init": "tok.bos"}, sorted(set(inputs)))

    # -- the step logic and the emission ----------------------------------------------------------
    def step(self) -> None:
        self.fields = {}
        for _, node in self.graph.items():
            if node.op == "field":
                self.fields[node.state] = [self.operand("step", a) for a in node.args]
            elif node.op == "stop":
                self.stop = self.operand("step", node.args[0])
        if not hasattr(self, "stop"):
            self.stop = ("c", 0)

    def next_position(self) -> None:
        """`next.pos`, the record position emitted next, and `next.lane`, the lane of its
        field, where optional fields and port tokens make them depend on the record:
        `tok.next` (the position after the token's own) unless that one is optional, then
        the first position from there on that the record has, read from the condition
        fields' digits in the scratch (a condition names a field always present and emitted
        earlier, so this record's value is there)."""
        plan, p = self.plan, self.protocol
        slots, lanes = p.tokens_per_record, field_lanes(self.graph)

        def lane_at(position: int) -> int:
            return position_lane(p, lanes, position)

        position_arms, lane_arms, fixed = [], [], {}
        for following in range(slots):
            conditions = self._conditions_from(following)
            if not conditions:
                fixed.setdefault(lane_at(following), []).append(following)
                continue
            digits = [(name, d) for name in conditions
                      for d in range(-(-p.field_by_name[name].width // 4))]
            operands = tuple(("v", self.field_input_digit[key]) for key in digits)

            def skip(*values, start=following, digits=digits):
                held = {}
                for (name, d), value in zip(digits, values):
                    held[name] = held.get(name, 0) | value << (4 * d)
                return p.next_position(start - 1, held) if start else 0
            computed = [("pos", skip, position_arms, slots)]
            if lanes:
                computed.append(("lane", lambda *v, skip=skip: lane_at(skip(*v)), lane_arms,
                                 max(lanes.values()) + 1))
            for label, fn, arms, size in computed:
                out = plan.value(f"next.{label}.from{following}", size)
                plan.add(Op(out, Function(operands, fn), operand_values(operands), [out], "emit"))
                arms.append(((following,), ("v", out)))
        position = plan.value("next.pos", slots)
        operands = [("v", "tok.next")] + [a for _, a in position_arms]
        plan.add(Op(position, Choose(("v", "tok.next"), tuple(position_arms), ("v", "tok.next")),
                    operand_values(operands), [position], "emit"))
        if not lanes:
            return
        lane_arms += [(tuple(positions), ("c", lane)) for lane, positions in fixed.items()]
        lane = plan.value("next.lane", max(lanes.values()) + 1)
        operands = [("v", "tok.next")] + [a for _, a in lane_arms]
        plan.add(Op(lane, Choose(("v", "tok.next"), tuple(lane_arms), ("c", 0)),
                    operand_values(operands), [lane], "emit"))

    def _conditions_from(self, position: int) -> list[str]:
        """The condition fields that decide which position is emitted when `position` is
        next in order: those of the optional fields and port tokens from there to the next
        position every record has (none when `position` is one)."""
        p, names = self.protocol, []
        while 0 < position < p.tokens_per_record:
            conditions = p.conditions_at(position)
            if not conditions:
                break
            names += [name for name in conditions if name not in names]
            position += p.field_by_name[p.record_slots[position][0]].bytes \
                if position < len(p.record_slots) else 1
        return names

    def emission(self) -> None:
        plan, p = self.plan, self.protocol
        slots = p.tokens_per_record
        kind = plan.value("next.kind", slots + 1)
        stop = self.stop
        following = "next.pos" if p.optional else "tok.next"
        operands = [("v", following), stop]
        plan.add(Op(kind, Function(tuple(operands),
                                   lambda n, s=0: slots if (n == 0 and s) else n),
                    operand_values(operands), [kind], "emit"))
        for half, label in ((0, "lo"), (1, "hi")):
            out = plan.value(f"next.{label}", 16)
            arms = []
            for slot in range(len(p.record_slots)):
                name, digit = p.slot_digits(slot)[half] or ("", 0)
                digits = self.fields.get(name, [])
                arms.append(((slot,), digits[digit] if digit < len(digits) else ("c", 0)))
            operands = [("v", following)] + [a for _, a in arms]
            plan.add(Op(out, Choose(("v", following), tuple(arms), ("c", 0)),
                        operand_values(operands), [out], "emit"))
            plan.emission[label] = out
        plan.emission["kind"] = kind

