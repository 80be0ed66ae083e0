"""Register blocks: a dense product's running sums held in vector registers from its first
term to its last (LLVM IR written through a numba intrinsic).

`dense_kernels.dense_panels` multiplies a panel of `LANES` rows by a few columns at a time
with `block_product(columns)`: a kernel that loads the block's sums once, adds the terms
from `start` to `stop` in turn,

    sums[c, r] = sums[c, r] + panel[k, r] * x[k, c]        (k ascending)

a multiply then an add, each rounded (LLVM's `fmul` and `fadd` with no fast-math flag, so
never fused into one rounding): the sums of the engine's CSR kernels, to the bit.  Then it
stores them once.  numba's own loops keep such sums in an array, that is in memory, where
each term waits on the store of the one before; here each column's sums are one LLVM vector
value, which the compiler keeps in a register, and a weight vector, loaded once, serves
every column of the block (each column's value broadcast to every lane, which x86's
AVX-512 folds into the multiply).

A block of `PREFETCH_FROM_COLUMNS` columns or more does enough arithmetic on each weight to
wait on memory: it asks for the panel's weights `PREFETCH_BYTES` ahead of the term it adds
(`llvm.prefetch`, a hint that changes no value and never faults), which takes eight columns
from 33 to 42 G multiply-adds a second on one core while the weights stream from memory
(`bench/bench_dense.py`).  Fewer columns are bound by memory itself, and the hint only
costs them.

A weight is a float32 or bfloat16 bits (uint16), read as the high half of a float32 whose
low half is zero: exact.  A bfloat16 panel holds its terms in pairs (`PAIRED`): each 32-bit
word one row's weights of terms 2m (low half) and 2m + 1 (high half), so one load of 16
words gives both terms' vectors, by a shift (term 2m) and a mask (term 2m + 1), two simple
operations a lane for 32 weights.  Widening 16 weights of one term at a time (zero-extend
16 to 32 bits across the register, then shift) took issue slots the multiplies needed:
with the pairs, eight columns on one panel in the first-level cache went from about 41 to
43.8 G multiply-adds a second on one core, and 64 columns of a 6,144 x 2,048 matrix from
19.1 to 17.2 ms (`bench/bench_dense.py --baseline`, 2-core AMD EPYC, Zen 4).  The sums are
the same: term 2m is still added before term 2m + 1.

The IR is plain LLVM and runs wherever LLVM runs; `LANES` float32s are one AVX-512
register, and a machine with narrower registers splits each vector in two (the same sums;
eight columns then spill a few to the first-level cache).
"""

from __future__ import annotations

from functools import lru_cache

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# the rows of a block: float32s in one vector register (512 bits)
LANES = 16

# blocks of this many columns or more ask for the panel's weights this many bytes ahead
PREFETCH_FROM_COLUMNS, PREFETCH_BYTES = 4, 4096

# a bfloat16 panel's terms in pairs: [ceil(terms / 2), PAIRED * LANES] uint16, entry
# [m, PAIRED * r + t] row r's weight of term PAIRED * m + t (`dense_kernels.pack_panels`)
PAIRED = 2

_FLOAT, _INT32 = ir.FloatType(), ir.IntType(32)
_VECTOR = ir.VectorType(_FLOAT, LANES)
_WORDS = ir.VectorType(_INT32, LANES)


def _paired_terms(builder, words):
    """16 words of a bfloat16 panel (each a row's weights of two terms) as the float32
    vectors of the two terms: the low halves moved up 16 places, the high halves with the
    low 16 bits cleared."""
    low = builder.shl(words, ir.Constant(_WORDS, [16] * LANES))
    high = builder.and_(words, ir.Constant(_WORDS, [-(1 << 16)] * LANES))
    return builder.bitcast(low, _VECTOR), builder.bitcast(high, _VECTOR)


def _broadcast(builder, value, vector=_VECTOR):
    """`value` in every lane of a vector."""
    single = builder.insert_element(ir.Constant(vector, ir.Undefined), value,
                                    ir.Constant(_INT32, 0))
    return builder.shuffle_vector(single, ir.Constant(vector, ir.Undefined),
                                  ir.Constant(ir.VectorType(_INT32, LANES), [0] * LANES))


def _splat(builder, word):
    """A 32-bit integer in every lane of a vector."""
    return _broadcast(builder, word, _WORDS)


def _prefetch(builder, pointer):
    """Ask for the cache line `PREFETCH_BYTES` past `pointer` (a read, kept in every cache
    level: `llvm.prefetch` with locality 3, data)."""
    bytes_pointer = ir.PointerType(ir.IntType(8))
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [bytes_pointer, _INT32, _INT32, _INT32]),
        "llvm.prefetch.p0i8")
    ahead = builder.gep(builder.bitcast(pointer, bytes_pointer),
                        [ir.Constant(ir.IntType(64), PREFETCH_BYTES)])
    builder.call(prefetch, [ahead] + [ir.Constant(_INT32, value) for value in (0, 3, 1)])


@lru_cache(maxsize=None)
def block_product(columns: int, gathered: bool = False):
    """The kernel `block(panel, x, sums, start, stop, column, panel_rows, x_rows)`:

        for k in start .. stop - 1, ascending, for j in 0 .. columns - 1, r in 0 .. LANES - 1:
            sums[column + j, r] = sums[column + j, r] + panel[k, r] * x[k, column + j]

    with every sum of the block held in a register from the first term to the last.
    `panel` is a C-contiguous [inner, LANES] float32 array, or bfloat16 bits with the terms
    in pairs (uint16 [ceil(inner / 2), PAIRED * LANES]; `start` then even), `x` float32
    [inner, any] in any layout, `sums` a C-contiguous float32 [any, LANES].
    `gathered`: term k is instead panel row `panel_rows[k]` (a term of the panel) times x's
    row `x_rows[k]` (int64 indices), so a product over some of the panel's rows and some of
    x's needs no copy of them; otherwise `panel_rows` and `x_rows` are not read (pass any
    int64 arrays).
    A block of `PREFETCH_FROM_COLUMNS` or more that is not gathered asks for its weights
    ahead."""
    prefetching = columns >= PREFETCH_FROM_COLUMNS and not gathered

    @intrinsic
    def block(typingctx, panel, x, sums, start, stop, column, panel_rows, x_rows):
        def is_array(value, ndim, dtypes, layouts):
            return (isinstance(value, types.Array) and value.ndim == ndim
                    and value.dtype in dtypes and value.layout in layouts)

        if not (is_array(panel, 2, (types.float32, types.uint16), "C")
                and is_array(x, 2, (types.float32,), "CFA")
                and is_array(sums, 2, (types.float32,), "C")
                and is_array(panel_rows, 1, (types.int64,), "CA")
                and is_array(x_rows, 1, (types.int64,), "CA")
                and all(isinstance(n, types.Integer) for n in (start, stop, column))):
            return None

        def codegen(context, builder, signature, args):
            panel_type, x_type, sums_type = signature.args[:3]
            arrays = [context.make_array(kind)(context, builder, value)
                      for kind, value in zip(signature.args[:3], args[:3])]
            first, last, first_column = (context.cast(builder, value, kind, types.intp)
                                         for value, kind in zip(args[3:6], signature.args[3:6]))
            zero = ir.Constant(first.type, 0)

            def index(which, k):
                """Entry k of the int64 array argument `which` (panel_rows or x_rows)."""
                kind = signature.args[which]
                array = context.make_array(kind)(context, builder, args[which])
                return builder.load(cgutils.get_item_pointer2(
                    context, builder, array.data, cgutils.unpack_tuple(builder, array.shape),
                    cgutils.unpack_tuple(builder, array.strides), kind.layout, [k]))

            def pointer(which, row, column):
                array, kind = arrays[which], signature.args[which]
                return cgutils.get_item_pointer2(
                    context, builder, array.data, cgutils.unpack_tuple(builder, array.shape),
                    cgutils.unpack_tuple(builder, array.strides), kind.layout, [row, column])

            def vector_pointer(which, row, column, element):
                return builder.bitcast(pointer(which, row, column),
                                       ir.PointerType(ir.VectorType(element, LANES)))

            def nth_column(j):
                return builder.add(first_column, ir.Constant(first.type, j))

            weight_type = panel_type.dtype
            sums_pointers = [vector_pointer(2, nth_column(j), zero, _FLOAT)
                             for j in range(columns)]
            registers = []
            for where in sums_pointers:
                slot = cgutils.alloca_once(builder, _VECTOR)      # promoted to a register
                builder.store(builder.load(where, align=4), slot)
                registers.append(slot)

            def add_term(weights, x_row):
                for j, slot in enumerate(registers):
                    value = builder.load(pointer(1, x_row, nth_column(j)))
                    term = builder.fmul(weights, _broadcast(builder, value))
                    builder.store(builder.fadd(builder.load(slot), term), slot)

            step = ir.Constant(first.type, 1)
            if weight_type == types.float32:
                with cgutils.for_range_slice(builder, first, last, step) as (k, _):
                    panel_row, x_row = (index(6, k), index(7, k)) if gathered else (k, k)
                    where = vector_pointer(0, panel_row, zero, _FLOAT)
                    if prefetching:
                        _prefetch(builder, where)
                    add_term(builder.load(where, align=4), x_row)
            elif gathered:                          # bfloat16 bits, a term from its pair
                sixteen = ir.Constant(_WORDS, [16] * LANES)
                with cgutils.for_range_slice(builder, first, last, step) as (k, _):
                    term = index(6, k)
                    where = vector_pointer(0, builder.ashr(term, step), zero, _INT32)
                    words = builder.load(where, align=4)
                    low = builder.trunc(builder.sub(step, builder.and_(term, step)), _INT32)
                    shift = builder.mul(_splat(builder, low), sixteen)
                    weights = builder.and_(builder.shl(words, shift),
                                           ir.Constant(_WORDS, [-(1 << 16)] * LANES))
                    add_term(builder.bitcast(weights, _VECTOR), index(7, k))
            else:                                   # bfloat16 bits, the terms in pairs
                pairs_from, pairs_to = builder.ashr(first, step), builder.ashr(last, step)
                with cgutils.for_range_slice(builder, pairs_from, pairs_to, step) as (m, _):
                    where = vector_pointer(0, m, zero, _INT32)
                    if prefetching:
                        _prefetch(builder, where)
                    low, high = _paired_terms(builder, builder.load(where, align=4))
                    even = builder.add(m, m)
                    add_term(low, even)
                    add_term(high, builder.add(even, step))
                odd = builder.icmp_signed("!=", builder.and_(last, step), zero)
                with builder.if_then(odd):              # the last term, alone in its pair
                    where = vector_pointer(0, pairs_to, zero, _INT32)
                    low, _ = _paired_terms(builder, builder.load(where, align=4))
                    add_term(low, builder.sub(last, step))

            for where, slot in zip(sums_pointers, registers):
                builder.store(builder.load(slot), where, align=4)
            return context.get_dummy_value()

        return types.none(panel, x, sums, start, stop, column, panel_rows, x_rows), codegen

    return block
