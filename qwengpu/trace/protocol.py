"""The trace vocabulary: every token a compiled model reads or writes, derived from a `Design`.

A changed spec changes the vocabulary: the record fields (`emit`) and the state elements
(`memory`, `register`) of the elaborated design decide every token.  docs/trace.md explains
the format for readers; this docstring is the API for the emitter and the runtime.

    protocol = TraceProtocol.from_design(design)
    protocol.vocab_size, protocol.tokens_per_record
    protocol.describe(token_id)      -> Token (kind, name, byte, value, index, text)
    protocol.token_id("rval2.b1=3f") -> int      (also field_token, init_token, stage_token,
                                                 commit_token, and .pad_id .unk_id .bos_id
                                                 .trace_id .eos_id)
    protocol.encode_records(records) -> ids      (a trace, ending with eos)
    protocol.record_slots[i] -> (field, byte);   protocol.following_slot(token_id) -> record
                                                 position the model emits next (None: unused)
    protocol.write_ports, protocol.port_token(k) (commit tokens of a record: see `port`)
    protocol.save(dir); TraceProtocol.load(dir)  (protocol.json + tokenizer files)

Token kinds, in id order (ids are dense, 0 .. vocab_size-1, fixed by the design alone):

- `control` (ids 0..4): `<pad>`, `<unk>`, `<bos>` (start of launch), `<trace>` (end of the
  prompt: the model answers it with the first field of the first record, or eos), `<eos>`
  (end of launch, the checkpoint's `eos_token_id`).  There is no end-of-record token.
- `field`: one token per (record field, byte, value).  A field of `width` bits is
  `ceil(width/8)` bytes, little-endian; byte `b` has `2**min(8, width - 8b)` values.  Text
  `{field}.b{byte}={value:02x}`, e.g. `rval2.b1=3f`.  A *pair* (`emit (a, b)`, two fields
  of at most 4 bits in every record) is one slot whose tokens hold a in the low hex digit
  and b (`packed`) in the high one: one token per (a, b), text `{a}={a:x},{b}={b:x}`, e.g.
  `active=f,exec=3`, value `a | b << 4` (`pair` names b).  A record is its fields' bytes in emit
  order (`record_slots`), then its port tokens.  The tokens of the last slot
  (`closes_record`) close the record: their pass commits write port 0 of every store.
- `port`: one token per write port k = 1 .. `write_ports`-1, text `commit:port{k}`: its pass
  commits write port k of every store that has one (a store written several times per step,
  e.g. `mem` by every lane, `qwengpu.trace.write_ports`), from the record
  still in the scratch.  The model emits them itself, after the record's last field, in
  order, in every record: a record is `tokens_per_record` = fields' bytes + `write_ports`-1
  tokens, and *record positions* 0 .. `tokens_per_record`-1 number them (field slots first,
  port k at position `len(record_slots)` + k - 1, its `slot`).  A machine whose stores all
  take one write per step has no port tokens.
- `init`: one token per record slot, text `init:{field}.b{byte}`: write 0 into that slot of
  the record scratch without closing a record (prompt only: scratch initialisation).
- `stage`: one token per (byte, value) for bytes 0 .. `stage_bytes`-1 (enough for the widest
  state element), text `set.b{byte}={value:02x}`: write the byte into the *staging scratch*
  (a memory of `stage_bytes` slots, keyed by byte) without committing anything.
- `commit`: one token per state element and index (`memory` elements row-major, then
  `register`s, in declaration order), text `mem[5]`, `regs[3][1][4]`, `ntid`: write
  `state[index] <= staged bytes 0 .. ceil(width/8)-1` (little-endian).

The model only ever emits field tokens, port tokens and `<eos>` (the output after a prompt
token is never used), so those are the lm_head rows that decide anything; `following_slot`
says which record position a given input token must be answered with.

Prompt writes therefore do not depend on the DeltaNet conv window: a 64-bit word needs 8 value
bytes, more than 4 consecutive tokens can carry, so values go through the staging scratch the
way record fields go through the record scratch, and the commit token (which names element and
index) reads them back, like the token that closes a record.  `qwengpu.trace.prompt`
guarantees: every staging slot and every record-scratch slot is written before the first
commit; before each commit the staged bytes 0 .. ceil(width/8)-1 hold exactly the value (bits
above the element's width are 0); a byte is restaged only when it differs from what the
staging slot holds; every state element that is not 0 is committed exactly once, and
every other one reads the 0 that `<bos>` wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Iterable, Sequence

from qwengpu.trace.write_ports import port_conditions, write_ports
from qwengpu.dsl.netlist import Design, condition_text, field_present
from qwengpu.errors import UserError

FORMAT = "qwengpu-trace-protocol"
VERSION = 1
PROTOCOL_FILE = "protocol.json"
CONTROL_TOKENS = ("<pad>", "<unk>", "<bos>", "<trace>", "<eos>")


class ProtocolError(UserError):
    """A checkpoint's protocol that is missing, malformed or does not fit its use."""


@dataclass(frozen=True)
class FieldSpec:
    """A record field: `name`, `width` bits, stored as `bytes` little-endian tokens; an
    optional field is present only when field `when` (always present, earlier) holds: bit
    `when_bit` of it, or any bit when `when_bit` is None."""

    name: str
    width: int
    when: str | None = None
    when_bit: int | None = None
    packed: bool = False            # the second of a pair: in the previous field's token

    def present(self, values: dict[str, int]) -> bool:
        """Whether the field is in a record whose earlier fields hold `values`."""
        return field_present(self.when, self.when_bit, values)

    def condition_text(self) -> str:
        return condition_text(self.when, self.when_bit)

    @property
    def bytes(self) -> int:
        return -(-self.width // 8)

    def byte_values(self, byte: int) -> int:
        """How many values byte `byte` of the field can take."""
        return 1 << min(8, self.width - 8 * byte)


@dataclass(frozen=True)
class StateSpec:
    """A state element: a `memory` of `shape` elements or a `register` (shape ())."""

    name: str
    kind: str
    shape: tuple[int, ...]
    width: int

    @property
    def size(self) -> int:
        return prod(self.shape)

    @property
    def bytes(self) -> int:
        return -(-self.width // 8)

    def indices(self) -> Iterable[tuple[int, ...]]:
        """Every index, row-major (the register's only index is ())."""
        for flat in range(self.size):
            index = []
            for dim in reversed(self.shape):
                flat, digit = divmod(flat, dim)
                index.append(digit)
            yield tuple(reversed(index))


@dataclass(frozen=True)
class Token:
    """The meaning of one token id (see the module docstring for the kinds)."""

    id: int
    kind: str                        # control | field | port | init | stage | commit
    name: str                        # control text, field name, state name; "" for stage,
                                     # "port{k}" for port
    text: str
    byte: int | None = None          # field, init, stage
    value: int | None = None         # field, stage (init writes 0)
    index: tuple[int, ...] | None = None   # commit: element index, () for a register
    slot: int | None = None          # field, init: position in `record_slots`; port: its
                                     # record position
    closes_record: bool = False      # field tokens of the last record slot
    port: int | None = None          # port: the write port its pass commits
    pair: str | None = None          # field token of a pair: the field in its high digit


def _field_from_json(entry: list) -> FieldSpec:
    """`[name, width]`, `[name, width, when, bit]` for an optional field (bit null: any), or
    `[name, width, null, null, true]` for the second field of a pair."""
    name, width, *condition = entry
    if len(condition) == 3 and condition == [None, None, True]:
        return FieldSpec(str(name), int(width), packed=True)
    if condition:
        when, bit = condition
        return FieldSpec(str(name), int(width), str(when), None if bit is None else int(bit))
    return FieldSpec(str(name), int(width))


def _field_to_json(field: FieldSpec) -> list:
    if field.packed:
        return [field.name, field.width, None, None, True]
    return [field.name, field.width] + ([] if field.when is None else
                                        [field.when, field.when_bit])


def _port_when_from_json(entries: list | None) -> list | None:
    """`port_when`: per port token, null (always) or a list of [field, bit]."""
    if entries is None:
        return None
    return [None if bits is None else tuple((str(name), int(bit)) for name, bit in bits)
            for bits in entries]


def _hex(value: int) -> str:
    return f"{value:02x}"


def commit_text(name: str, index: tuple[int, ...]) -> str:
    return name + "".join(f"[{i}]" for i in index)


class TraceProtocol:
    """The vocabulary of one design (see the module docstring)."""

    def __init__(self, design_name: str, fields: Sequence[FieldSpec],
                 state: Sequence[StateSpec], write_ports: int = 1,
                 port_when: Sequence[tuple[tuple[str, int], ...] | None] | None = None):
        if not fields:
            raise ProtocolError(f"{design_name} emits no record fields: there is no trace")
        if write_ports < 1:
            raise ProtocolError(f"{design_name}: {write_ports} write ports (at least 1)")
        self.design_name = design_name
        self.fields = tuple(fields)
        self.state = tuple(state)
        self.write_ports = write_ports
        # per port token k = 1 ..: the (field, bit) pairs one of which it needs, None: always
        self.port_when = tuple(port_when) if port_when is not None else \
            (None,) * (write_ports - 1)
        if len(self.port_when) != write_ports - 1:
            raise ProtocolError(f"{design_name}: {len(self.port_when)} port conditions for "
                                f"{write_ports - 1} port tokens")
        self.field_by_name = {f.name: f for f in self.fields}
        self._check_conditions()
        self.state_by_name = {s.name: s for s in self.state}
        self.record_slots = tuple((f.name, b) for f in self.fields if not f.packed
                                  for b in range(f.bytes))
        self._slot_index = {slot: position for position, slot in enumerate(self.record_slots)}
        # the slot of each pair's first field -> the field in its high digit
        self.slot_pair = {self._slot_index[self.fields[number - 1].name, 0]: f.name
                          for number, f in enumerate(self.fields) if f.packed}
        self.tokens_per_record = len(self.record_slots) + write_ports - 1
        self.stage_bytes = max((s.bytes for s in self.state), default=1)
        self.tokens: list[Token] = []
        self._ids: dict[str, int] = {}
        self._build()
        self.pad_id, self.unk_id, self.bos_id, self.trace_id, self.eos_id = (
            self._ids[text] for text in CONTROL_TOKENS)

    def _check_conditions(self) -> None:
        seen: dict[str, FieldSpec] = {}
        for number, field in enumerate(self.fields):
            if field.packed:
                first = self.fields[number - 1] if number else None
                if first is None or first.packed or any(
                        f.width > 4 or f.when is not None for f in (first, field)):
                    raise ProtocolError(f"{self.design_name}: field {field.name} shares the "
                                        "token of the field before it, which needs two "
                                        "fields of at most 4 bits in every record")
            if field.when is not None:
                condition = seen.get(field.when)
                if condition is None or condition.when is not None or number in \
                        (0, len(self.fields) - 1):
                    raise ProtocolError(f"{self.design_name}: field {field.name} is present "
                                        f"when {field.condition_text()}, which is not an "
                                        "always-present field before it, or it is the "
                                        "first or last field")
            seen[field.name] = field
        for port, bits in enumerate(self.port_when, 1):
            for name, bit in bits or ():
                if name not in seen or seen[name].when is not None or \
                        not 0 <= bit < seen[name].width:
                    raise ProtocolError(f"{self.design_name}: port token {port} depends on bit "
                                        f"{bit} of {name}, not a bit of an always-present field")

    @property
    def optional(self) -> bool:
        """Whether some record field or port token is optional (records differ in length)."""
        return any(f.when is not None for f in self.fields) or \
            any(bits is not None for bits in self.port_when)

    def port_present(self, port: int, values: dict[str, int]) -> bool:
        """Whether port token `port` is in a record whose fields hold `values`."""
        bits = self.port_when[port - 1]
        return bits is None or any(values[name] >> bit & 1 for name, bit in bits)

    def conditions_at(self, position: int) -> list[str]:
        """The fields that decide whether record position `position` is in a record (none:
        it always is, or it is not the first token of its field)."""
        if position < len(self.record_slots):
            name, byte = self.record_slots[position]
            when = self.field_by_name[name].when
            return [when] if when is not None and byte == 0 else []
        bits = self.port_when[position - len(self.record_slots)]
        return list(dict.fromkeys(name for name, _ in bits or ()))

    def slot_digits(self, slot: int) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
        """The (field, hex digit) that record slot `slot`'s low and high token digits hold
        (None: the token has no such digit, its field is narrower)."""
        name, byte = self.record_slots[slot]
        width = self.field_by_name[name].width
        low = (name, 2 * byte) if 8 * byte < width else None
        if slot in self.slot_pair:
            return low, (self.slot_pair[slot], 0)
        return low, (name, 2 * byte + 1) if 8 * byte + 4 < width else None

    def slot_pattern(self, slot: int) -> str:
        """How the tokens of record slot `slot` read, for messages: `pc.b0=..`, or
        `active=.,exec=.` for a pair."""
        name, byte = self.record_slots[slot]
        pair = self.slot_pair.get(slot)
        return f"{name}=.,{pair}=." if pair is not None else f"{name}.b{byte}=.."

    def field_values(self, token: Token) -> list[tuple[str, int]]:
        """What a field token says: (field, its bits at their place in the field's value),
        one for a byte of a field, two for a pair."""
        if token.pair is not None:
            return [(token.name, token.value & 15), (token.pair, token.value >> 4)]
        return [(token.name, token.value << (8 * token.byte))]

    def present_at(self, position: int, values: dict[str, int]) -> bool:
        """Whether record position `position` is in a record whose fields hold `values`."""
        if position < len(self.record_slots):
            name, byte = self.record_slots[position]
            return byte > 0 or self.field_by_name[name].present(values)
        return self.port_present(position - len(self.record_slots) + 1, values)

    @classmethod
    def from_design(cls, design: Design) -> "TraceProtocol":
        fields = [FieldSpec(f.name, f.width, f.when, f.when_bit, f.packed)
                  for f in design.record]
        state = [StateSpec(m.name, "memory", tuple(m.shape), m.width)
                 for m in design.memories.values()]
        state += [StateSpec(r.name, "register", (), r.width) for r in design.registers.values()]
        return cls(design.name, fields, state, write_ports(design), port_conditions(design))

    # ---- the vocabulary ---------------------------------------------------------------------

    def _add(self, kind: str, name: str, text: str, **meaning) -> None:
        if text in self._ids:
            raise ProtocolError(f"two tokens of {self.design_name} are both written {text!r}")
        token = Token(len(self.tokens), kind, name, text, **meaning)
        self._ids[text] = token.id
        self.tokens.append(token)

    def _build(self) -> None:
        for text in CONTROL_TOKENS:
            self._add("control", text, text)
        last_slot = len(self.record_slots) - 1
        for slot, (name, byte) in enumerate(self.record_slots):
            closes = slot == last_slot
            pair = self.slot_pair.get(slot)
            if pair is not None:
                for high in range(1 << self.field_by_name[pair].width):
                    for low in range(1 << self.field_by_name[name].width):
                        self._add("field", name, f"{name}={low:x},{pair}={high:x}", byte=0,
                                  value=low | high << 4, slot=slot, closes_record=closes,
                                  pair=pair)
                continue
            for value in range(self.field_by_name[name].byte_values(byte)):
                self._add("field", name, f"{name}.b{byte}={_hex(value)}", byte=byte,
                          value=value, slot=slot, closes_record=closes)
        self._field_base = {slot: self._ids[f"{name}.b{byte}=00" if slot not in self.slot_pair
                                            else f"{name}=0,{self.slot_pair[slot]}=0"]
                            for slot, (name, byte) in enumerate(self.record_slots)}
        for port in range(1, self.write_ports):
            self._add("port", f"port{port}", f"commit:port{port}", port=port,
                      slot=len(self.record_slots) + port - 1)
        for slot, (name, byte) in enumerate(self.record_slots):
            self._add("init", name, f"init:{name}.b{byte}", byte=byte, slot=slot)
        for byte in range(self.stage_bytes):
            for value in range(256):
                self._add("stage", "", f"set.b{byte}={_hex(value)}", byte=byte, value=value)
        for element in self.state:
            for index in element.indices():
                self._add("commit", element.name, commit_text(element.name, index),
                          index=index)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    @property
    def texts(self) -> list[str]:
        return [token.text for token in self.tokens]

    def describe(self, token_id: int) -> Token:
        if not 0 <= token_id < len(self.tokens):
            raise ProtocolError(f"token id {token_id} is outside the vocabulary "
                                f"(0 .. {len(self.tokens) - 1})")
        return self.tokens[token_id]

    def token_id(self, text: str) -> int:
        try:
            return self._ids[text]
        except KeyError:
            raise ProtocolError(f"{text!r} is not a token of {self.design_name}") from None

    def field_token(self, name: str, byte: int, value: int) -> int:
        """The token of byte `byte` of field `name` holding `value`; of a pair's first field,
        `value` is the token's byte, `first | second << 4`."""
        field = self.field_by_name.get(name)
        slot = self._slot_index.get((name, byte))
        pair = self.slot_pair.get(slot)
        if pair is not None:
            low, high = value & 15, value >> 4
            if low < 1 << field.width and high < 1 << self.field_by_name[pair].width:
                return self._field_base[slot] + (high << field.width) + low
        elif field is not None and slot is not None and 0 <= value < field.byte_values(byte):
            return self._field_base[slot] + value
        raise ProtocolError(f"field {name} has no byte {byte} with value {value}")

    def init_token(self, name: str, byte: int) -> int:
        return self.token_id(f"init:{name}.b{byte}")

    def stage_token(self, byte: int, value: int) -> int:
        return self.token_id(f"set.b{byte}={_hex(value)}")

    def commit_token(self, name: str, index: Sequence[int] = ()) -> int:
        return self.token_id(commit_text(name, tuple(index)))

    def port_token(self, port: int) -> int:
        """The token committing write port `port` (1 .. write_ports-1)."""
        if not 1 <= port < self.write_ports:
            raise ProtocolError(f"{self.design_name} has no port token {port} (write ports "
                                f"0 .. {self.write_ports - 1}, port 0 on the record's close)")
        return self.token_id(f"commit:port{port}")

    # ---- records as tokens -------------------------------------------------------------------

    def encode_record(self, record: dict[str, int]) -> list[int]:
        """The ids of one record (every field of the design, by name): the bytes of its
        present fields, then its port tokens (`tokens_per_record` ids when every field is
        present).  An absent field must hold 0 (it reads 0)."""
        ids = []
        for number, field in enumerate(self.fields):
            value = record[field.name]
            if not 0 <= value < (1 << field.width):
                raise ProtocolError(f"record field {field.name} = {value} does not fit "
                                    f"{field.width} bits")
            if not field.present(record):
                if value:
                    raise ProtocolError(f"record field {field.name} is absent ("
                                        f"{field.condition_text()} does not hold) but is {value}")
                continue
            if field.packed:                   # in the previous field's token
                continue
            if number + 1 < len(self.fields) and self.fields[number + 1].packed:
                value |= record[self.fields[number + 1].name] << 4
            for byte in range(field.bytes):
                ids.append(self.field_token(field.name, byte, value >> (8 * byte) & 0xFF))
        return ids + [self.port_token(port) for port in range(1, self.write_ports)
                      if self.port_present(port, record)]

    def encode_records(self, records: Iterable[dict[str, int]], eos: bool = True) -> list[int]:
        """A whole trace (what the model generates after `<trace>`), eos-terminated."""
        ids = [token for record in records for token in self.encode_record(record)]
        return ids + [self.eos_id] if eos else ids

    def following_slot(self, token_id: int) -> int | None:
        """The record position the model must emit after reading this token: the next one
        of the record, position 0 after `<trace>` and after a record's last token (or
        `<eos>` there when the machine stops); None where the output is never used (prompt
        tokens, `<bos>`, `<pad>`, `<unk>`, `<eos>`)."""
        token = self.describe(token_id)
        if token_id == self.trace_id:
            return 0
        if token.kind in ("field", "port"):
            return (token.slot + 1) % self.tokens_per_record
        return None

    def next_position(self, position: int, values: dict[str, int]) -> int:
        """The record position that follows `position` in a record whose fields so far hold
        `values`: the next one, skipping absent fields and port tokens (0 after the last)."""
        following = (position + 1) % self.tokens_per_record
        while following and not self.present_at(following, values):
            following += self.field_by_name[self.record_slots[following][0]].bytes \
                if following < len(self.record_slots) else 1
            following %= self.tokens_per_record
        return following

    def slot_of(self, token_id: int) -> int | None:
        """The record slot a field token fills, or None for any other token."""
        token = self.describe(token_id)
        return token.slot if token.kind == "field" else None

    # ---- files ---------------------------------------------------------------------------------

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "design": self.design_name,
                "vocab_size": self.vocab_size, "tokens_per_record": self.tokens_per_record,
                "stage_bytes": self.stage_bytes, "write_ports": self.write_ports,
                **({"port_when": [None if bits is None else [list(b) for b in bits]
                                  for bits in self.port_when]}
                   if any(bits is not None for bits in self.port_when) else {}),
                "control": {text: self._ids[text] for text in CONTROL_TOKENS},
                "fields": [_field_to_json(f) for f in self.fields],
                "state": [{"name": s.name, "kind": s.kind, "shape": list(s.shape),
                           "width": s.width} for s in self.state]}

    @classmethod
    def from_json(cls, data: dict, where: str = "protocol") -> "TraceProtocol":
        try:
            if data.get("format") != FORMAT or data.get("version") != VERSION:
                raise ProtocolError(f"{where}: not a {FORMAT} version {VERSION} file")
            protocol = cls(data["design"],
                           [_field_from_json(entry) for entry in data["fields"]],
                           [StateSpec(s["name"], s["kind"], tuple(s["shape"]), s["width"])
                            for s in data["state"]], int(data.get("write_ports", 1)),
                           _port_when_from_json(data.get("port_when")))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ProtocolError(f"{where}: malformed protocol ({error!r})") from None
        if protocol.vocab_size != data.get("vocab_size"):
            raise ProtocolError(f"{where}: says vocab_size {data.get('vocab_size')}, its "
                                f"fields and state give {protocol.vocab_size}")
        return protocol

    def __eq__(self, other) -> bool:
        return isinstance(other, TraceProtocol) and self.to_json() == other.to_json()

    def build_tokenizer(self):
        """A `tokenizers.Tokenizer`: WordLevel over the token texts, split on whitespace."""
        from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

        vocab = {token.text: token.id for token in self.tokens}
        tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
        tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        tokenizer.add_special_tokens([AddedToken(text, special=True, normalized=False)
                                      for text in CONTROL_TOKENS])
        return tokenizer

    def save(self, directory: str | Path) -> None:
        """protocol.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / PROTOCOL_FILE).write_text(json.dumps(self.to_json(), indent=1) + "\n")
        self.build_tokenizer().save(str(directory / "tokenizer.json"))
        special = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
                   "unk_token": "<unk>"}
        config = {"tokenizer_class": "PreTrainedTokenizerFast", **special,
                  "model_max_length": 1 << 30, "clean_up_tokenization_spaces": False}
        (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")
        (directory / "special_tokens_map.json").write_text(json.dumps(special, indent=1) + "\n")

    @classmethod
    def load(cls, directory: str | Path) -> "TraceProtocol":
        path = Path(directory) / PROTOCOL_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ProtocolError(f"{path} not found: {directory} is not a compiled QwenGPU "
                                "checkpoint (hdlc compile writes it)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ProtocolError(f"cannot read {path}: {error}") from None
        if not isinstance(data, dict):
            raise ProtocolError(f"{path}: not a {FORMAT} file")
        return cls.from_json(data, str(path))

    def __repr__(self) -> str:
        return (f"TraceProtocol({self.design_name}: {self.vocab_size} tokens, "
                f"{self.tokens_per_record} per record)")
