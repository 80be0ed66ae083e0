"""Rewrite tests/ptx/data/*.ptx from the .cu files next to them with the loader's nvcc driver
(`nvcc -ptx -arch=sm_80 -O3`, qwengpu.ptx.nvcc).  Run: python tests/ptx/data/regen_ptx.py"""

from pathlib import Path

from qwengpu.ptx.nvcc import compile_cuda

if __name__ == "__main__":
    for source in sorted(Path(__file__).parent.glob("*.cu")):
        source.with_suffix(".ptx").write_text(compile_cuda(str(source)))
        print(f"regenerated {source.with_suffix('.ptx').name}")
