#!/usr/bin/env bash
# The reduced QwenGPU (one lane, one warp) compiled and run on a CUDA machine, in one go:
#
#     bench/reduced_on_gpu.sh [LOG_DIR]
#
# 1. `hdlc compile specs/qwengpu.hdl --target min` with the reduced parameters (fp32);
# 2. the one-thread example kernels inside the model, `hdlc run --backend model --check --json
#    --device DEVICE` (ENGINE writes the trace: the sparse engine's torch version by default,
#    ENGINE=transformers for stock generate(); the reference interpreter follows in lockstep);
# 3. the slow single-step test of every opcode on that checkpoint, on the GPU;
# 4. bench/bench_launch.py beside the interpreter, with the checkpoint's nonzeros per layer.
# Each step gets what is left of BUDGET_S seconds (default 1500), so the script ends in time.
# Logs go to LOG_DIR (default out/reduced-gpu). Needs ~12 GB of GPU memory; QWENGPU_DEVICE=cpu
# runs it on a CPU (slowly: about a record a minute).
set -o pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${1:-out/reduced-gpu}
DEVICE=${QWENGPU_DEVICE:-cuda}
MODEL=${QWENGPU_REDUCED_MODEL:-out/qwengpu-reduced}
BUDGET_S=${BUDGET_S:-1500}
PARAMS="-P LANES=1 -P WARPS=1 -P REGS=15 -P PREDS=7 -P MEM_WORDS=32 -P PROG_WORDS=64 -P PARAM_WORDS=4"
export PYTHONUNBUFFERED=1
mkdir -p "$LOG_DIR"
left() { echo $(( BUDGET_S - SECONDS > 5 ? BUDGET_S - SECONDS : 5 )); }
hdlc() { timeout "$(left)" python3 -m qwengpu.cli "$@"; }
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
    transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")'

status=0
if [ ! -f "$MODEL/model.safetensors" ]; then
    hdlc compile specs/qwengpu.hdl --target min $PARAMS -o "$MODEL" 2>&1 \
        | tee "$LOG_DIR/compile.log" || exit 1
fi
cp "$MODEL/schedule.txt" "$LOG_DIR/" 2>/dev/null
run_kernel() {
    echo "== $1 ($SECONDS s)"
    hdlc run "examples/$1/launch.json" --backend model --model "$MODEL" --check --json \
        --device "$DEVICE" --engine "${ENGINE:-sparse}" \
        > "$LOG_DIR/run-$1.json" 2> "$LOG_DIR/run-$1.err" || status=1
    cat "$LOG_DIR/run-$1.json"; tail -n 3 "$LOG_DIR/run-$1.err" | grep -v '^\[transformers\]'
}
run_kernel serial_mad
run_kernel serial_sum
echo "== single steps ($SECONDS s)"
QWENGPU_TEST_DEVICE=$DEVICE QWENGPU_REDUCED_MODEL=$MODEL timeout "$(left)" python3 -m pytest \
    -q -m slow -p no:cacheprovider tests/backend_torch/test_single_step.py -k reduced 2>&1 \
    | tee "$LOG_DIR/single_step.log" | tail -n 5 || status=1
echo "== bench ($SECONDS s)"
timeout "$(left)" python3 bench/bench_launch.py --model "$MODEL" --kernels serial_mad \
    --device "$DEVICE" --engine "${ENGINE:-sparse}" 2>&1 | grep -v '^\[transformers\]' | tee "$LOG_DIR/bench.log" || status=1
for kernel in ${MORE_KERNELS:-serial_horner serial_sort}; do run_kernel "$kernel"; done
echo "== done ($SECONDS s), status $status"
exit $status
