#!/usr/bin/env bash
# The reduced QwenGPU (one lane, one warp) compiled and run on a CUDA machine, in one go:
#
#     bench/reduced_on_gpu.sh [LOG_DIR]
#
# 1. `hdlc compile specs/qwengpu.hdl --target min` with the reduced parameters (fp32);
# 2. the one-thread example kernels inside the model with `--check` (the reference interpreter
#    in lockstep) and the benchmark beside the interpreter (bench/bench_launch.py);
# 3. the slow single-step test of every opcode on that checkpoint, on the GPU.
# Logs go to LOG_DIR (default out/reduced-gpu). Needs a GPU with ~20 GB free; on a CPU it
# works too, slowly (QWENGPU_DEVICE=cpu).
set -o pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${1:-out/reduced-gpu}
DEVICE=${QWENGPU_DEVICE:-cuda}
MODEL=${QWENGPU_REDUCED_MODEL:-out/qwengpu-reduced}
PARAMS="-P LANES=1 -P WARPS=1 -P REGS=15 -P PREDS=7 -P MEM_WORDS=32 -P PROG_WORDS=64 -P PARAM_WORDS=4"
KERNELS=${KERNELS:-serial_mad,serial_sum,serial_horner,serial_sort}
export PYTHONUNBUFFERED=1
mkdir -p "$LOG_DIR"
hdlc() { python3 -m qwengpu.cli "$@"; }
echo "$(python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")')"

status=0
if [ ! -f "$MODEL/model.safetensors" ]; then
    python3 -m qwengpu.cli compile specs/qwengpu.hdl --target min $PARAMS \
        -o "$MODEL" 2>&1 | tee "$LOG_DIR/compile.log" || exit 1
fi
cp "$MODEL/schedule.txt" "$LOG_DIR/" 2>/dev/null
for kernel in ${KERNELS//,/ }; do
    hdlc run "examples/$kernel/launch.json" --backend model --model "$MODEL" --check --trace \
        2>&1 | tee "$LOG_DIR/run-$kernel.log" || status=1
done
python3 bench/bench_launch.py --model "$MODEL" --kernels "$KERNELS" --device "$DEVICE" \
    2>&1 | tee "$LOG_DIR/bench.log" || status=1
QWENGPU_TEST_DEVICE=$DEVICE QWENGPU_REDUCED_MODEL=$MODEL python3 -m pytest -q -m slow \
    tests/backend_torch/test_single_step.py -k reduced 2>&1 | tee "$LOG_DIR/single_step.log" \
    || status=1
exit $status
